"""`gate serve --events`: NDJSON events on stderr, stdout clean; --no-ask and bad config."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ask.ask_kit import AskingGate, Sent, env_turn, github_token
from fake_provider import FakeProvider
from gate.cli import cli
from gate.proxy.server import Listening


def _serve(*args: str) -> tuple[subprocess.Popen[str], Listening]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    proc = subprocess.Popen(
        [sys.executable, "-m", "gate", "serve", "--port", str(port), *args],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ,
    )
    return proc, Listening("127.0.0.1", port)


def _stdout_until(proc: subprocess.Popen[str], prefix: str) -> list[str]:
    assert proc.stdout is not None
    lines: list[str] = []
    while not (lines and lines[-1].startswith(prefix)):
        line = proc.stdout.readline()
        assert line, f"gate serve exited: {proc.communicate()[1][-2000:]}"
        lines.append(line)
    return lines


def test_events_go_to_stderr_as_ndjson_and_stdout_stays_clean(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    proc, listening = _serve("--events", "--upstream", f"anthropic={provider.url}")
    try:
        printed = _stdout_until(proc, "Approval page:")
        assert f"http://127.0.0.1:{listening.port}/_gate/ui?token=" in printed[-1]
        g = AskingGate(listening, gate_dirs["data"], provider)
        token = github_token()
        sent: Sent = g.send(env_turn(gate_dirs["project"], token))
        assert proc.stderr is not None
        asked = json.loads(proc.stderr.readline())
        assert asked["event"] == "question" and asked["kind"] == "send-secret"
        assert token not in json.dumps(asked)
        g.control().answer(asked["id"], "approve")
        answered = json.loads(proc.stderr.readline())
        assert (answered["event"], answered["id"], answered["answer"], answered["by"]) == (
            "answered",
            asked["id"],
            "approve",
            "person",
        )
        assert sent.wait().error is None and token in provider.seen[-1].body.decode()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=15)
    finally:
        proc.kill()
    assert "{" not in "".join(printed) + out
    assert all(json.loads(line) for line in err.splitlines())  # nothing but NDJSON


def test_without_events_a_log_line_on_stderr_says_how_to_answer(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    proc, listening = _serve("--upstream", f"anthropic={provider.url}")
    try:
        _stdout_until(proc, "Approval page:")
        g = AskingGate(listening, gate_dirs["data"], provider)
        token = github_token()
        sent = g.send(env_turn(gate_dirs["project"], token))
        assert proc.stderr is not None
        line = ""
        while "question" not in line:
            line = proc.stderr.readline()
            assert line, "gate serve exited"
        [q] = g.control().pending()
        assert f"gate approve {q['id']}" in line and token not in line
        g.control().answer(q["id"], "redact")
        assert sent.wait().error is None
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=15)
    finally:
        proc.kill()


def test_serve_no_ask_applies_the_default_at_once(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    proc, listening = _serve("--no-ask", "--upstream", f"anthropic={provider.url}")
    try:
        assert "Not asking" in _stdout_until(proc, "Not asking")[-1]
        g = AskingGate(listening, gate_dirs["data"], provider)
        token = github_token()
        assert g.send(env_turn(gate_dirs["project"], token)).wait(15).error is None
        assert token not in provider.seen[-1].body.decode()
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=15)
    finally:
        proc.kill()


@pytest.mark.parametrize(
    ("yaml", "field"),
    [
        ("ask:\n  timeout_seconds: -1\n", "ask.timeout_seconds"),
        ("ask:\n  default: approve\n", "ask.default"),
        ("ask:\n  mode: sometimes\n", "ask.mode"),
        ("ask:\n  timeout: 3\n", "ask.timeout"),
        ("decisions:\n  record_dataset: maybe\n", "decisions.record_dataset"),
        ("decisions:\n  helper_url: ftp://x\n", "decisions.helper_url"),
        ("decisions:\n  helper_url: http://helper.example/propose\n", "decisions.helper_url"),
    ],
)
def test_bad_ask_config_is_an_error_naming_the_field(
    gate_dirs: dict[str, Path], yaml: str, field: str
) -> None:
    gate_dirs["config"].mkdir()
    (gate_dirs["config"] / "config.yaml").write_text(yaml)
    result = CliRunner().invoke(cli, ["serve", "--port", "0"])
    assert result.exit_code == 1 and field in result.output, result.output


def test_allow_remote_lets_a_remote_helper_through(gate_dirs: dict[str, Path]) -> None:
    from gate import config
    from gate.cli.serve import _ask_config

    gate_dirs["config"].mkdir()
    path = gate_dirs["config"] / "config.yaml"
    path.write_text(
        "ask: never\ndecisions:\n  helper_url: http://helper.example/p\n  allow_remote: true\n"
    )
    loaded = _ask_config(config.load(path), no_ask=False)
    assert loaded.ask.mode == "never" and loaded.decisions.helper_url == "http://helper.example/p"
