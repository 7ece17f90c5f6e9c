"""`gate sessions` and `gate show --session`: conversations from the audit, each turn as the
provider received it; secrets masked on screen unless --reveal; `gate show --raw`."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import anthropic
from audit_rows import messages_row
from click.testing import CliRunner

from gate.audit.records import RequestRow, Response, Usage
from gate.audit.store import AuditStore
from gate.cli import cli
from gate.proxy.server import Listening
from screen.secrets_corpus import Gen


def invoke(*args: str) -> Any:
    return CliRunner().invoke(cli, list(args))


def converse(gate: Listening, sid: str, turns: list[str]) -> None:
    with anthropic.Anthropic(
        base_url=f"{gate.base_url}/anthropic",
        api_key="sk-ant-test",
        max_retries=0,
        default_headers={"x-claude-code-session-id": sid},
    ) as client:
        messages: list[Any] = []
        for text in turns:
            messages.append({"role": "user", "content": text})
            reply = client.messages.create(model="claude-s", max_tokens=8, messages=messages)
            messages.append({"role": "assistant", "content": reply.content[0].text})


def test_sessions_list_and_a_conversation_turn_by_turn(gate: Listening) -> None:
    token = Gen(random.SystemRandom().randrange(1 << 30)).crc_token("gh" + "p_")
    converse(gate, "one", ["first question", f"push with {token}", "third question"])
    converse(gate, "two", ["unrelated thread"])
    result = invoke("sessions", "--json")
    assert result.exit_code == 0
    listed = json.loads(result.stdout)["sessions"]
    assert [s["first_prompt"] for s in listed] == ["unrelated thread", "first question"]
    one = listed[1]
    assert (one["requests"], one["withheld"], one["blocked"]) == (3, 2, 0)  # resent: twice
    text = invoke("sessions").stdout
    assert "first question" in text and "unrelated thread" in text
    shown = invoke("show", "--session", one["session"][:8])
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert token not in out
    turns = out.split("── turn ")[1:]
    assert len(turns) == 3
    assert "+ user: first question" in turns[0]
    assert "[gate: redacted" in turns[1] and "first question" not in turns[1]
    assert "+ user: third question" in turns[2] and "push with" not in turns[2]
    data = json.loads(invoke("show", "--session", one["session"], "--json").stdout)
    assert [t["new_from"] for t in data["turns"]] == [0, 1, 3]  # reply, prompt
    missing = invoke("show", "--session", "zzzz")
    assert missing.exit_code == 1 and "gate sessions" in missing.stderr
    assert invoke("show").exit_code == 2


def test_show_masks_an_approved_secret_unless_revealed_and_raw_is_exact(
    gate_dirs: dict[str, Path],
) -> None:
    token = Gen(random.SystemRandom().randrange(1 << 30)).crc_token("gh" + "p_")
    body = json.dumps(
        {"model": "m", "messages": [{"role": "user", "content": f"approved: {token}"}]}
    ).encode()
    rid = AuditStore(gate_dirs["data"] / "audit.db").record_request(
        messages_row(body, session="s:abc"),
    )
    masked = invoke("show", str(rid), "--body").stdout
    assert token not in masked and "chars masked" in masked
    assert token in invoke("show", str(rid), "--body", "--reveal").stdout
    raw = CliRunner().invoke(cli, ["show", str(rid), "--raw"])
    assert raw.stdout_bytes == body
    session = invoke("show", "--session", "s:abc").stdout
    assert token not in session and "chars masked" in session


def test_log_header_filters_and_human_units(gate_dirs: dict[str, Path]) -> None:
    store = AuditStore(gate_dirs["data"] / "audit.db")
    common = {"upstream": "anthropic", "host": "h", "method": "POST", "path": "/v1/messages"}
    sent = store.record_request(
        RequestRow(
            **common,
            request_bytes=12_345,
            verdict="forwarded",
            run_id="run-1",
            session="s:one",
            agent="claude-code",
        ),
    )
    blocked = store.record_request(
        RequestRow(
            **common,
            request_bytes=10,
            verdict="blocked",
            run_id="run-2",
            session="s:two",
            reason="no",
        )
    )
    failed = store.record_request(
        RequestRow(**common, request_bytes=10, verdict="forwarded", run_id="run-2", session="s:two")
    )
    store.record_response(
        failed, Response(status=None, latency_ms=1.0, usage=Usage(), error="connection refused")
    )
    out = invoke("log").stdout
    header, *lines = out.splitlines()
    assert header.split()[:4] == ["ID", "WHEN", "AGENT", "VERDICT"]
    assert "\x1b[" not in out  # not a terminal: no colour
    assert any(f"{sent}  " in ln and "12.3 kB" in ln and "s ago" in ln for ln in lines)

    def ids(*args: str) -> list[int]:
        return [r["id"] for r in json.loads(invoke("log", "--json", *args).stdout)["requests"]]

    assert ids("--verdict", "blocked") == [blocked]
    assert ids("--verdict", "failed") == [failed]
    assert ids("--verdict", "forwarded") == [sent]
    assert ids("--run", "run-2") == [failed, blocked]
    assert ids("--session", "s:one") == [sent]
    assert json.loads(invoke("log", "--json").stdout)["ok"] is True
