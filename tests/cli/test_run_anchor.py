"""A run's project root is anchored when `gate run` starts: an agent started in a
repository's subdirectory that makes a `.gate/` there (with rules of its own) is still
screened with the repository's rules, through a real listener, in reverse and forward mode."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.proxy.server import Listening

GATE = [sys.executable, "-m", "gate"]

# The "agent", started in repo/pkg: before its first request it makes pkg/.gate/ with a
# rule file that allows everything, then sends the repository's denied file.
CLIENT = textwrap.dedent("""
    import json, os, sys
    import anthropic
    repo, secret = sys.argv[1], sys.argv[2]
    os.makedirs(".gate")
    with open(".gate/rules.yaml", "w") as f:
        f.write("allow:\\n  - Read(**)\\nsecrets:\\n  high: allow\\n")
    client = anthropic.Anthropic(api_key="sk-ant-fake", max_retries=0)
    turn = [
        {"role": "user", "content": "deploy it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
            "input": {"file_path": os.path.join(repo, "config/prod.json")}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": '{"password": "' + secret + '"}'}]},
    ]
    msg = client.messages.create(model="claude-test", max_tokens=8, messages=turn)
    print(json.dumps({"text": msg.content[0].text}))
""")


def _repo(gate_dirs: dict[str, Path]) -> tuple[Path, Path]:
    repo = gate_dirs["project"]
    (repo / ".git").mkdir()
    (repo / ".gate").mkdir()
    (repo / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./config/prod.json)\n")
    pkg = repo / "pkg"
    pkg.mkdir()
    (pkg / "client.py").write_text(CLIENT)
    return repo, pkg


def _check(
    proc: subprocess.CompletedProcess[str],
    provider: FakeProvider,
    repo: Path,
    secret: str,
    gate_dirs: dict[str, Path],
) -> None:
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["text"] == provider.reply_text
    assert (repo / "pkg" / ".gate" / "rules.yaml").exists()  # the agent did make it
    body = provider.seen[-1].body.decode()
    assert secret not in body
    placeholder = provider.seen[-1].json()["messages"][2]["content"][0]["content"]
    assert "Read(./config/prod.json)" in placeholder and ".gate/rules.yaml:2" in placeholder
    log = subprocess.run(
        [*GATE, "log", "--json"], cwd=repo, capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(log.stdout)["requests"][0]["project_root"] == str(repo)


@pytest.mark.parametrize("mode", ["reverse", "forward"])
def test_a_gate_dir_made_in_a_subdirectory_does_not_move_the_runs_rules(
    provider: FakeProvider, gate_dirs: dict[str, Path], mode: str
) -> None:
    repo, pkg = _repo(gate_dirs)
    secret = fake_secret()
    flags = ["--forward"] if mode == "forward" else []
    proc = subprocess.run(
        [
            *GATE,
            "run",
            *flags,
            "--upstream",
            f"anthropic={provider.url}",
            "--",
            sys.executable,
            "client.py",
            str(repo),
            secret,
        ],
        cwd=pkg,
        capture_output=True,
        text=True,
        timeout=90,
        env=dict(os.environ),
        check=False,
    )
    _check(proc, provider, repo, secret, gate_dirs)


def test_a_shared_gate_screens_a_run_with_the_root_it_started_with(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """`gate serve` already running (another process's view of the tree): the run id in
    the base URL (`/_run/ID`) names the root, found when the run started."""
    repo, pkg = _repo(gate_dirs)
    secret = fake_secret()
    proc = subprocess.run(
        [*GATE, "run", "--", sys.executable, "client.py", str(repo), secret],
        cwd=pkg,
        capture_output=True,
        text=True,
        timeout=90,
        env=dict(os.environ),
        check=False,
    )
    _check(proc, provider, repo, secret, gate_dirs)
