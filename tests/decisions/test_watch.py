"""`gate watch` against a real gate listener: one frame, and the live view on a pty."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
from click.testing import CliRunner

from conftest import finished_row
from decisions.term import Term
from gate.cli import cli
from gate.proxy.server import Listening

FIELDS = {
    "id",
    "ts",
    "agent",
    "upstream",
    "path",
    "model",
    "verdict",
    "status",
    "withheld",
    "request_bytes",
    "error",
}


def _send(client: anthropic.Anthropic, text: str = "hello") -> None:
    client.messages.create(
        model="claude-test-1", max_tokens=10, messages=[{"role": "user", "content": text}]
    )


def test_once_prints_recent_requests_and_no_bodies(
    client: anthropic.Anthropic, gate: Listening, gate_dirs: dict[str, Path]
) -> None:
    marker = "a-body-watch-must-not-print"
    _send(client, marker)
    finished_row(gate_dirs["data"])  # the status is written just after the reply
    result = CliRunner().invoke(cli, ["watch", "--once"])
    assert result.exit_code == 0, result.output
    row = next(line for line in result.stdout.splitlines() if "/v1/messages" in line)
    assert "forwarded" in row and "200" in row and "claude-test-1" in row
    assert "PENDING QUESTIONS (0)" in result.stdout and "none" in result.stdout
    assert marker not in result.stdout and "\x1b[" not in result.stdout
    result = CliRunner().invoke(cli, ["watch", "--once", "--json"])
    frame = json.loads(result.stdout)
    assert frame["pending"] == [] and frame["gate"] is None
    assert set(frame["requests"][0]) == FIELDS and marker not in result.stdout


def test_once_without_a_gate_says_so_and_creates_nothing(gate_dirs: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["watch", "--once"])
    assert result.exit_code == 0
    assert f"no gate is running for data dir {gate_dirs['data']}" in result.stdout
    assert not gate_dirs["data"].exists()


def test_live_view_needs_a_terminal() -> None:
    result = CliRunner().invoke(cli, ["watch"])
    assert result.exit_code == 2 and "use --once" in result.stderr


def test_live_view_redraws_new_requests_and_quits_on_q(
    client: anthropic.Anthropic, gate: Listening, watch: Term
) -> None:
    t = watch
    seen = t.expect("no requests recorded yet")
    _send(client)
    t.expect("claude-test-1", after=seen)
    at = t.press("q")
    assert t.wait() == 0
    assert b"\x1b[?1049l" in t.out[at:]  # the terminal's own screen is back


def test_ctrl_c_quits_cleanly_too(watch: Term) -> None:
    watch.expect("RECENT REQUESTS")
    at = watch.press("\x03")
    assert watch.wait() == 0
    assert b"\x1b[?1049l" in watch.out[at:] and b"Traceback" not in watch.out


def test_an_unreadable_audit_is_a_clear_error(gate_dirs: dict[str, Path]) -> None:
    gate_dirs["data"].mkdir()
    (gate_dirs["data"] / "audit.db").write_bytes(b"not a database, " * 100)
    result = CliRunner().invoke(cli, ["watch", "--once"])
    assert result.exit_code == 3  # cannot read
    assert f"{gate_dirs['data'] / 'audit.db'}: cannot read the audit" in result.stderr
