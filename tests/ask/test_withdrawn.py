"""A question whose agent gave up is withdrawn at once: recorded as such, never forwarded,
and an answer given afterwards is refused."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ask.ask_kit import AskingGate, env_turn, github_token
from gate.audit.store import AuditStore
from gate.errors import GateError


def raw_request(gate: AskingGate, body: dict[str, Any]) -> socket.socket:
    """A client that sends its request and then waits, like an agent."""
    data = json.dumps(body).encode()
    sock = socket.create_connection(("127.0.0.1", gate.listening.port), timeout=10)
    sock.sendall(
        b"POST /anthropic/v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\n"
        b"content-type: application/json\r\nx-api-key: sk-ant-test\r\n"
        b"content-length: " + str(len(data)).encode() + b"\r\n\r\n" + data
    )
    return sock


def test_an_agent_that_goes_away_withdraws_its_question(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    gate = asking(timeout_seconds=60)
    token = github_token()
    sock = raw_request(gate, env_turn(gate_dirs["project"], token))
    (question,) = gate.wait_pending()
    sock.close()  # the agent gave up (Ctrl-C, its own timeout)
    deadline = time.monotonic() + 5
    while gate.control().pending():
        assert time.monotonic() < deadline, "the question is still pending"
        time.sleep(0.05)
    with pytest.raises(GateError, match=r"already answered \(withdrawn, by agent"):
        gate.control().answer(question["id"], "approve")
    assert gate.provider.seen == []  # nothing was forwarded
    # The row is written once the question is withdrawn (on a worker thread, after the
    # question left the pending list): wait for it, as `gate log` would show it.
    store, deadline = AuditStore(gate_dirs["data"] / "audit.db", reader=True), time.monotonic() + 5
    while not (rows := list(store.rows(5, body=False))):
        assert time.monotonic() < deadline, "no audit row for the withdrawn request"
        time.sleep(0.05)
    assert [r["verdict"] for r in rows] == ["withdrawn"]
    assert "disconnected" in rows[0]["reason"] and rows[0]["status"] is None
    assert token not in json.dumps(rows)

    def answers() -> list[Any]:  # in the dataset: written just after the question closed
        lines = (gate_dirs["data"] / "decisions" / "dataset").glob("*.jsonl")
        records = [json.loads(line) for f in lines for line in f.read_text().splitlines()]
        return [r.get("answer") for r in records if r.get("id") == question["id"]]

    while not answers():
        assert time.monotonic() < deadline, "the withdrawal is not in the dataset"
        time.sleep(0.05)
    assert answers() == ["withdrawn"]
