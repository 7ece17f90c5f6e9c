"""A request whose provider could not be reached is `failed` in `gate log`, `gate watch` and
the report: never a green "forwarded", never counted as sent."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anthropic
import pytest
from click.testing import CliRunner

from conftest import closed_after_test
from gate.audit.store import AuditStore
from gate.cli import cli
from gate.cli.watchview import Snapshot, View, render
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def dead_gate(gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    config = replace(
        Config(), port=0, ask=AskConfig(mode="never"), projects=(str(gate_dirs["project"]),)
    ).with_upstreams(
        {"anthropic": parse_upstream("anthropic", f"http://127.0.0.1:{closed_port()}")}
    )
    server = BackgroundGate(config, gate_dirs["data"], advertise=True)
    yield server.start()
    server.stop()


def test_unreachable_upstream_is_failed_everywhere(
    dead_gate: Listening, gate_dirs: dict[str, Path]
) -> None:
    client = closed_after_test(
        anthropic.Anthropic(
            base_url=f"{dead_gate.base_url}/anthropic", api_key="sk-ant-test", max_retries=0
        )
    )
    with pytest.raises(anthropic.APIError):
        client.messages.create(
            model="claude-x", max_tokens=8, messages=[{"role": "user", "content": "hello"}]
        )
    store = AuditStore(gate_dirs["data"] / "audit.db", reader=True)
    deadline = time.monotonic() + 10
    while not (row := next(store.rows(1, body=False)))["error"]:
        assert time.monotonic() < deadline, "the error was never recorded"
        time.sleep(0.05)
    assert row["status"] is None and row["verdict"] == "forwarded"  # as the proxy wrote it
    out = CliRunner().invoke(cli, ["log"]).stdout
    assert " failed " in out and "forwarded" not in out
    frame = "\n".join(render(Snapshot([row], [], None), View("d"), width=None, color=False))
    assert " failed " in frame and "forwarded" not in frame
    data = json.loads(CliRunner().invoke(cli, ["report", "--json"]).stdout)
    assert data["verdicts"] == {"failed": 1}
    assert data["totals"]["requests"] == 1 and data["totals"]["bytes_sent"] == 0


def test_watch_shows_approved_findings_apart_from_withheld() -> None:
    approve = {"kind": "secret", "decision": {"answer": "approve", "by": "person"}}
    redact = {"kind": "secret", "decision": {"answer": "redact", "by": "person"}}
    row = {
        "id": 7,
        "ts": time.time(),
        "verdict": "forwarded",
        "status": 200,
        "upstream": "anthropic",
        "path": "/v1/messages",
        "request_bytes": 10,
        "withheld": [approve, approve, redact],
    }
    lines = render(Snapshot([row], [], None), View("d"), width=None, color=False)
    header = next(line for line in lines if "WITHHELD" in line)
    assert header.endswith("WITHHELD  APPROVED")
    line = next(line for line in lines if line.lstrip().startswith("7 "))
    assert line.split()[-2:] == ["1", "2"]  # one withheld, two approved (sent)
