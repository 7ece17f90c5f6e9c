"""`gate run` asks too: the CLI finds the gate the run started; `--no-ask` never parks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from ask.ask_kit import github_token
from fake_provider import FakeProvider
from gate.ask.client import ControlClient
from gate.errors import GateError

# The "agent": an SDK script whose Bash tool output holds a token.
CLIENT = textwrap.dedent("""
    import sys
    import anthropic
    client = anthropic.Anthropic(api_key="sk-ant-fake", max_retries=0, timeout=60)
    turn = [
        {"role": "user", "content": "check the env"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
            "input": {"command": "env"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": "GITHUB_TOKEN=" + sys.argv[1] + "\\n"}]},
    ]
    print(client.messages.create(model="claude-test", max_tokens=8, messages=turn).id)
""")


def _run(project: Path, provider: FakeProvider, token: str, *flags: str) -> subprocess.Popen[str]:
    (project / "client.py").write_text(CLIENT)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gate",
            "run",
            *flags,
            "--upstream",
            f"anthropic={provider.url}",
            "--",
            sys.executable,
            "client.py",
            token,
        ],
        cwd=project,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ,
    )


def _dataset(data: Path) -> dict[str, object]:
    [line] = (data / "decisions" / "dataset" / "send-secret.jsonl").read_text().splitlines()
    return dict(json.loads(line))


def test_a_question_from_gate_run_is_answered_with_the_cli_client(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    token = github_token()
    proc = _run(gate_dirs["project"], provider, token)
    try:
        # Until the question parks or the run ends: how long that takes is the machine's
        # speed, not something to assert (the ceiling only stops a hang).
        deadline = time.monotonic() + 600
        while True:
            try:
                pending = ControlClient.find(gate_dirs["data"]).pending()
            except GateError:
                pending = []  # the run's gate is not up yet
            if pending or proc.poll() is not None or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert pending, f"gate run ended (rc {proc.returncode}) without asking"
        [q] = pending
        assert q["request"]["run_id"] and q["request"]["agent"] == "generic"
        assert proc.stderr is not None
        early = []  # not a terminal: a line tells the person gate waits (within a second)
        while not early or "gate: waiting for you" not in early[-1]:
            early.append(proc.stderr.readline())
            assert early[-1], "gate run never said it was waiting"
        ControlClient.find(gate_dirs["data"]).answer(q["id"], "approve")
        _, err = proc.communicate(timeout=300)
        err = "".join(early) + err
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert token in provider.seen[-1].body.decode()
    assert _dataset(gate_dirs["data"])["by"] == "person"
    told = [line for line in err.splitlines() if "gate: waiting for you" in line]
    assert len(told) == 1 and q["id"] in told[0] and "gate watch" in told[0]
    # At exit, one paragraph about the run.
    summaries = [line for line in err.splitlines() if "this run" in line]
    assert len(summaries) == 1, err
    (summary,) = summaries
    assert "1 request(s) to anthropic (1 forwarded)" in summary
    assert "You answered 1 question(s): 1 approve." in summary
    assert f"gate log --run {q['request']['run_id']}" in summary and token not in err
    assert list((gate_dirs["data"] / "control").iterdir()) == []  # the run's gate is gone


def test_gate_run_no_ask_never_parks(provider: FakeProvider, gate_dirs: dict[str, Path]) -> None:
    token = github_token()
    proc = _run(gate_dirs["project"], provider, token, "--no-ask")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert token not in provider.seen[-1].body.decode()
    assert _dataset(gate_dirs["data"])["by"] == "policy"
