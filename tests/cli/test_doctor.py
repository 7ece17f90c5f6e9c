"""`gate doctor`: one line per check, the fix on a fail, --json one object, exit 1 on a fail."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from fake_provider import FakeProvider
from gate.demo.stage import Stage
from gate.doctor import checks
from gate.doctor.checks import Status
from gate.proxy.server import Listening

FAILING = Path(__file__).parents[1] / "lock" / "failing_launcher.py"


def _doctor(cwd: Path, *args: str) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "gate", "doctor", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=120, check=False)
    return proc.returncode, proc.stdout + proc.stderr


def test_all_checks_pass_for_claude_code_against_a_loopback_upstream(
        gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]) -> None:
    code, out = _doctor(gate_dirs["project"], "--agent", "claude-code", "--json",
                        "--upstream", f"anthropic={provider.url}")
    report = json.loads(out)  # exactly one object
    assert code == 0 and report["ok"] is True, report
    status = {c["name"]: c["status"] for c in report["checks"]}
    assert status == {"gate reachable": "ok", "rules load": "ok",
                      "namespaces for --lock": "ok", "upstream anthropic": "ok",
                      "canary": "ok"}, report
    assert provider.seen == []  # the canary's own fake got the turns, not the upstream


def test_a_bad_rule_file_fails_with_its_file_and_line(
        provider: FakeProvider, gate_dirs: dict[str, Path]) -> None:
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./a)\n  - Frob(x\n")
    code, out = _doctor(project, "--agent", "claude-code", "--upstream",
                        f"anthropic={provider.url}")
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
    code, out = _doctor(gate_dirs["project"], "--agent", "claude-code", "--json",
                        "--upstream", f"anthropic=http://127.0.0.1:{closed}")
    report = json.loads(out)
    assert code == 1 and report["ok"] is False
    [up] = [c for c in report["checks"] if c["name"] == "upstream anthropic"]
    assert up["status"] == "fail" and f"127.0.0.1:{closed}" in up["detail"] and up["fix"]


def test_namespaces_fail_with_the_cause_when_unshare_is_refused(
        gate_dirs: dict[str, Path]) -> None:
    check = checks.namespaces(str(gate_dirs["project"]),
                              launcher=(sys.executable, "-P", str(FAILING)))
    assert check.status is Status.FAIL
    assert "unshare" in check.detail and check.fix


class LeakyStage(Stage):
    """A stage whose 'gate' is not there: turns go straight to the provider."""

    def _start(self) -> None:
        super()._start()
        self.base = f"{self.fake.url}"


def test_the_canary_fails_when_a_secret_reaches_the_provider(
        gate_dirs: dict[str, Path]) -> None:
    check = checks.canary(LeakyStage)
    assert check.status is Status.FAIL
    assert "the .env value" in check.detail and "the token" in check.detail
    assert check.fix
    assert os.listdir(gate_dirs["home"]) == []
