"""A request gate refused keeps the same attribution in the audit as one it sent: agent,
model, run, project, session, and the answer that blocked it."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anthropic
import pytest

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate import runs
from gate.audit.store import AuditStore
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening
from screen.secrets_corpus import Gen


@pytest.fixture
def blocking_gate(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    config = replace(Config(), port=0, ask=AskConfig(mode="never", default="block")).with_upstreams(
        {"anthropic": parse_upstream("anthropic", provider.url)}
    )
    server = BackgroundGate(config, gate_dirs["data"], advertise=True)
    yield server.start()
    server.stop()


def newest(data_dir: Path) -> dict[str, object]:
    return next(AuditStore(data_dir / "audit.db", reader=True).rows(1, body=False))


def test_a_blocked_row_names_its_agent_model_run_project_session_and_answer(
    blocking_gate: Listening, gate_dirs: dict[str, Path], provider: FakeProvider
) -> None:
    run = runs.register(gate_dirs["data"], str(gate_dirs["project"]), "claude-code")
    client = closed_after_test(
        anthropic.Anthropic(
            base_url=f"{blocking_gate.base_url}/_run/{run.id}/anthropic",
            api_key="sk-ant-test",
            max_retries=0,
            default_headers={"x-claude-code-session-id": "conv-1"},
        )
    )
    token = Gen(7).crc_token("gh" + "p_")
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(
            model="claude-blocked",
            max_tokens=8,
            messages=[{"role": "user", "content": f"push with {token}"}],
        )
    assert provider.seen == []  # nothing left
    row = newest(gate_dirs["data"])
    assert row["verdict"] == "blocked"
    assert (row["agent"], row["model"], row["run_id"], row["project_root"]) == (
        "claude-code",
        "claude-blocked",
        run.id,
        str(gate_dirs["project"]),
    )
    assert row["session"]
    (entry,) = row["withheld"]
    assert entry["kind"] == "secret" and entry["decision"]["answer"] == "block"
    assert entry["decision"]["by"] == "policy"
    assert token not in json.dumps(row)
    # The same conversation's next, sent, request shares the blocked row's session.
    client.messages.create(
        model="claude-blocked", max_tokens=8, messages=[{"role": "user", "content": "hello"}]
    )
    assert newest(gate_dirs["data"])["session"] == row["session"]
    client.close()


def test_a_body_gate_cannot_read_still_names_its_agent_and_run(
    blocking_gate: Listening, gate_dirs: dict[str, Path]
) -> None:
    run = runs.register(gate_dirs["data"], str(gate_dirs["project"]), "codex")
    req = urllib.request.Request(  # noqa: S310 (loopback http)
        f"{blocking_gate.base_url}/_run/{run.id}/anthropic/v1/messages",
        data=b"not json {",
        headers={"content-type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(req, timeout=10)  # noqa: S310 (loopback)
    refused.value.close()
    assert refused.value.code == 400
    row = newest(gate_dirs["data"])
    assert (row["verdict"], row["agent"], row["run_id"], row["model"]) == (
        "blocked",
        "codex",
        run.id,
        None,
    )
