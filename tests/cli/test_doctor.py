"""`gate doctor`: one line per check, the fix on a fail, --json one object, exit 1 on a fail."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from fake_provider import FakeProvider
from gate.demo.stage import Stage
from gate.doctor import checks
from gate.doctor.checks import Status
from gate.proxy import ca
from gate.proxy.server import Listening

FAILING = Path(__file__).parents[1] / "lock" / "failing_launcher.py"


def _doctor(cwd: Path, *args: str) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "gate", "doctor", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def test_all_checks_pass_for_claude_code_against_a_loopback_upstream(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    code, out = _doctor(
        gate_dirs["project"],
        "--agent",
        "claude-code",
        "--json",
        "--upstream",
        f"anthropic={provider.url}",
    )
    report = json.loads(out)  # exactly one object
    assert code == 0 and report["ok"] is True, report
    status = {c["name"]: c["status"] for c in report["checks"]}
    assert status == {
        "gate reachable": "ok",
        "rules load": "ok",
        "CA trusted": "ok",
        "namespaces for --lock": "ok",
        "upstream anthropic": "ok",
        "canary": "ok",
    }, report  # the running gate made its CA
    assert provider.seen == []  # the canary's own fake got the turns, not the upstream


def test_a_bad_rule_file_fails_with_its_file_and_line(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./a)\n  - Frob(x\n")
    code, out = _doctor(
        project, "--agent", "claude-code", "--upstream", f"anthropic={provider.url}"
    )
    assert code == 1
    [line] = [ln for ln in out.splitlines() if "rules load" in ln]
    assert line.startswith("fail") and ".gate/rules.yaml:3" in line, out
    assert "      fix: " in out.split(line, 1)[1].splitlines()[1]
    assert "warn  gate reachable" in out  # no gate serve: a warning, not a fail


def test_an_unreachable_upstream_fails_with_the_fix(gate_dirs: dict[str, Path]) -> None:
    import socket

    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    code, out = _doctor(
        gate_dirs["project"],
        "--agent",
        "claude-code",
        "--json",
        "--upstream",
        f"anthropic=http://127.0.0.1:{closed}",
    )
    report = json.loads(out)
    assert code == 1 and report["ok"] is False
    [up] = [c for c in report["checks"] if c["name"] == "upstream anthropic"]
    assert up["status"] == "fail" and f"127.0.0.1:{closed}" in up["detail"] and up["fix"]


def test_namespaces_fail_with_the_cause_when_unshare_is_refused(gate_dirs: dict[str, Path]) -> None:
    check = checks.namespaces(
        str(gate_dirs["project"]), launcher=(sys.executable, "-P", str(FAILING))
    )
    assert check.status is Status.FAIL
    assert "unshare" in check.detail and check.fix


class LeakyStage(Stage):
    """A stage whose 'gate' is not there: turns go straight to the provider."""

    def _start(self) -> None:
        super()._start()
        self.base = f"{self.fake.url}"


def test_the_canary_fails_when_a_secret_reaches_the_provider(gate_dirs: dict[str, Path]) -> None:
    check = checks.canary(LeakyStage)
    assert check.status is Status.FAIL
    assert "the .env value" in check.detail and "the token" in check.detail
    assert check.fix
    assert os.listdir(gate_dirs["home"]) == []


@pytest.mark.parametrize("agent", ["claude-code", "aider"])  # Node, and OpenSSL with the bundle
def test_the_ca_is_trusted_by_the_agents_runtime_and_a_wrong_one_is_not(
    agent: str, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    if agent in checks.NODE_AGENTS and shutil.which("node") is None:
        pytest.skip("no node")
    data = gate_dirs["data"]
    authority = ca.ensure(data)
    check = checks.ca_trusted(data, agent)
    assert check.status is Status.OK, check
    # Another CA's certificate where gate's should be: the leaf no longer verifies.
    other = ca.ensure(tmp_path / "other")
    authority.cert.write_bytes(other.cert.read_bytes())
    authority.bundle.write_bytes(other.bundle.read_bytes())
    check = checks.ca_trusted(data, agent)
    assert check.status is Status.FAIL and "does not trust" in check.detail, check
    assert check.fix
