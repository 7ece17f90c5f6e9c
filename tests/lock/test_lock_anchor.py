"""`gate run --lock` started in a repository's subdirectory: the agent can make a `.gate/`
there (only the repository's own is bound read-only), but the run's rules stay the ones of
the root anchored when it started, in forward mode and with `--reverse` (`/_run/ID`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli.test_run_anchor import GATE, _check, _repo

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.proxy.server import Listening

pytestmark = pytest.mark.timeout(180)


def _locked(
    flags: list[str], pkg: Path, repo: Path, secret: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GATE, "run", "--lock", *flags, "--", sys.executable, "client.py", str(repo), secret],
        cwd=pkg,
        capture_output=True,
        text=True,
        timeout=150,
        env=dict(os.environ),
        check=False,
    )


def test_a_locked_agent_cannot_move_its_rules_with_a_gate_dir_of_its_own(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    repo, pkg = _repo(gate_dirs)
    secret = fake_secret()
    proc = _locked(["--upstream", f"anthropic={provider.url}"], pkg, repo, secret)
    _check(proc, provider, repo, secret, gate_dirs)


def test_a_locked_agent_through_a_shared_gate_by_base_url_keeps_its_runs_root(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """`--reverse` through a `gate serve` already running: the `/_run/ID` in the base URL
    names the root found when the run started, not one found again per request."""
    repo, pkg = _repo(gate_dirs)
    secret = fake_secret()
    proc = _locked(["--reverse"], pkg, repo, secret)
    _check(proc, provider, repo, secret, gate_dirs)
