"""Run one real agent CLI through `gate run` against the fake model, and check what left.

The checks every agent's end-to-end test shares: the run finished, the `.env` value is in
no request the fake model saw (body or header), every tool result that carried it holds
gate's placeholder instead, and the audit names the agent and project without the value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fake_ws_models import FakeWsModels

from agent_clis import PROMPT, BlackHole, Case, environment, project_files
from agent_script import steps
from fake_models import FakeModels
from gate import providers
from gate.providers.segments import get_at
from gemini_upstream import FakeGemini

GATE = [sys.executable, "-m", "gate"]
PLACEHOLDER = "[gate: "  # a withheld tool result, or a withheld value inside any string


@dataclass
class Outcome:
    case: Case
    proc: subprocess.CompletedProcess[str]
    secret: str
    project: Path
    models: FakeModels | FakeWsModels | FakeGemini
    tried_outside: list[str]  # what the agent tried to reach besides gate (dropped)

    def explain(self) -> str:
        return (
            f"rc={self.proc.returncode} stdout={self.proc.stdout[-1500:]!r}"
            f" stderr={self.proc.stderr[-3000:]!r} outside={self.tried_outside[:5]}"
        )


# Forward mode's real hosts for each upstream a case uses: the agent names these, gate
# delivers to the fake (`--upstream NAME=fake`), and refuses every other host.
FORWARD_BASE = {"openai": "https://api.openai.com/v1", "copilot": "https://api.openai.com/v1"}


def run_through_gate(
    case: Case,
    gate_dirs: dict[str, Path],
    timeout: float = 240,
    *,
    forward: bool = False,
    argv: list[str] | None = None,
    fake: FakeModels | FakeWsModels | FakeGemini | None = None,
    extra: tuple[str, ...] = (),
    lock: bool = False,
    allow: tuple[str, ...] = (),
    also: tuple[str, ...] = (),
) -> Outcome:
    """`gate run [--forward] [--lock] [--upstream NAME=fake] -- AGENT ARGS` in a project
    whose .env is a fake. In forward mode the agent talks to the real provider host names
    through gate's proxy, and gate's egress policy is `block`: nothing else leaves. `also`:
    other gate upstreams the agent calls besides its model's, delivered to the same fake
    (gate would forward them to the real host)."""
    binary = case.binary()
    if binary is None:
        pytest.skip(f"no `{case.exe}` on PATH and {case.bin_env} unset")
    project, home = gate_dirs["project"].resolve(), gate_dirs["home"]
    secret = "fake-" + os.urandom(16).hex()
    project_files(project, secret)
    fake = fake or FakeModels()
    fake.script = steps(*case.calls(project), answer=case.answer)
    models = fake.start()
    hole = BlackHole()
    try:
        env = environment(case, home, project, hole.url)
        upstream: list[str] = []
        if forward:
            (gate_dirs["config"]).mkdir(parents=True, exist_ok=True)
            (gate_dirs["config"] / "config.yaml").write_text(
                "egress:\n  default: block\n" + (f"  allow: {list(allow)}\n" if allow else "")
            )
            name = "openai" if case.upstream == "copilot" else case.upstream
            upstream = ["--forward", "--upstream", f"{name}={models.url}"]
            for more in extra:  # other hosts the test delivers to loopback fakes
                upstream += ["--upstream", more]
            for other in also:
                upstream += ["--upstream", f"{other}={models.url}"]
            if case.inherit:  # the user's own provider, by its real host name
                env[case.inherit] = FORWARD_BASE[case.upstream]
        elif case.inherit:  # the user's own provider: gate forwards there
            env[case.inherit] = f"{models.url}/byok"
        else:
            upstream = ["--upstream", f"{case.upstream}={models.url}"]
        args = case.argv(PROMPT) if argv is None else argv
        # Locked, forward mode is the default: a locked reverse run says --reverse.
        locking = (["--lock"] if forward else ["--lock", "--reverse"]) if lock else []
        cmd = [*GATE, "run", *locking, *upstream, "--", binary, *args]
        try:
            proc = subprocess.run(
                cmd,
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"`gate run -- {case.exe}` did not finish in {timeout}s: {exc.stderr!r}")
    finally:
        hole.stop()
        models.stop()
    return Outcome(case, proc, secret, project, models, list(hole.tried))


def tool_results(body: dict[str, Any], path: str) -> list[str]:
    """The text of every tool result in a request body, found by gate's own walker."""
    fmt = providers.detect(path)
    assert fmt is not None, f"gate does not know the format of {path}"
    return [json.dumps(get_at(body, c.result)) for c in fmt.walk(body).calls if c.result]


def assert_never_sent(out: Outcome) -> None:
    assert out.proc.returncode == 0, out.explain()
    assert out.case.answer in out.proc.stdout, out.explain()
    bodies = [s for s in out.models.seen if s.body]
    assert bodies, out.explain()
    for seen in out.models.seen:
        assert out.secret.encode() not in seen.body, f"the .env value reached {seen.path}"
        assert all(out.secret not in v for v in seen.headers.values())
    calls = out.case.calls(out.project)
    if calls:
        # The turn that answered every call: each result is gate's placeholder.
        last = [tool_results(s.json(), s.path) for s in bodies]
        answered = max(last, key=len)
        assert len(answered) == len(calls), (answered, out.explain())
        for text in answered:
            assert PLACEHOLDER in text, text
    else:  # no tools: the file itself was pasted into the prompt
        assert any(PLACEHOLDER in s.body.decode() for s in bodies), out.explain()


def assert_audited(out: Outcome, gate_dirs: dict[str, Path], env: dict[str, str]) -> None:
    log = subprocess.run(
        [*GATE, "log", "--json"], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    rows = json.loads(log.stdout)["requests"]
    modified = [r for r in rows if r["verdict"] == "modified"]
    assert modified, rows
    assert all(
        r["agent"] == out.case.agent and r["project_root"] == str(out.project) for r in modified
    ), modified
    for f in gate_dirs["data"].rglob("*"):
        if f.is_file():
            assert out.secret.encode() not in f.read_bytes(), f"{f} holds the .env value"


def check(
    case: Case,
    gate_dirs: dict[str, Path],
    *,
    forward: bool = False,
    argv: list[str] | None = None,
    fake: FakeModels | FakeWsModels | FakeGemini | None = None,
    extra: tuple[str, ...] = (),
    lock: bool = False,
    also: tuple[str, ...] = (),
) -> Outcome:
    """Run the case through gate (locked or not) and make every check; returns the outcome."""
    out = run_through_gate(
        case, gate_dirs, forward=forward, argv=argv, fake=fake, extra=extra, lock=lock, also=also
    )
    assert_never_sent(out)
    assert_audited(out, gate_dirs, dict(os.environ))
    return out
