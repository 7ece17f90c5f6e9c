"""Paths, endpoints, queries and what gate says: read as the provider reads them, and nothing
the client sent that held a finding is written down or answered back in clear."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import pytest
from loguru import logger

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening
from gemini_messages import conversation as gemini_conversation
from gemini_messages import tool_turn as gemini_tool_turn
from messages import conversation, tool_turn

RULE_PLACEHOLDER = "not sent to the model provider"  # a tool rule withheld a whole result


@pytest.fixture
def secret(gate_dirs: dict[str, Path]) -> str:
    value = fake_secret("sk_live_")
    (gate_dirs["project"] / ".env").write_text(f"STRIPE_KEY={value}\n")
    return value


def _leaky(gate_dirs: dict[str, Path], secret: str) -> dict[str, Any]:
    project = str(gate_dirs["project"])
    return conversation(
        project,
        tool_turn("toolu_1", "Read", {"file_path": f"{project}/.env"}, f"STRIPE_KEY={secret}"),
    )


def _rows(gate_dirs: dict[str, Path]) -> list[dict[str, Any]]:
    return list(AuditStore(gate_dirs["data"] / "audit.db").rows(20))


# -- paths -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/anthropic/v1/x/../messages",
        "/anthropic/v1/%6Dessages",
        "/anthropic//v1/messages/.",
        "/anthropic/v1/messages.",
        "/anthropic/v1/./messages/",
        "/openai/../anthropic/v1/messages",
        "/anthropic/v1/%2e%2e/v1/messages",
        "/anthropic/x/y/../../v1//messages",
    ],
)
def test_a_path_is_screened_and_sent_as_its_normalised_meaning(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, path: str
) -> None:
    resp = httpx.post(
        f"{gate.base_url}{path}", json=_leaky(gate_dirs, secret), headers={"x-api-key": "k"}
    )
    assert resp.status_code == 200, resp.text
    seen = provider.seen[-1]
    assert seen.path == "/v1/messages"  # what leaves is the path the body was screened for
    assert secret not in seen.body.decode() and RULE_PLACEHOLDER in seen.body.decode()


@pytest.mark.parametrize(
    "path",
    [
        "/anthropic/v1%2Fmessages",
        "/anthropic/v1/messages%00",
        "/anthropic/v1\\messages",
        "/anthropic/v1%5cmessages",
    ],
)
def test_a_path_servers_read_differently_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, path: str
) -> None:
    resp = httpx.post(f"{gate.base_url}{path}", json=_leaky(gate_dirs, secret))
    assert resp.status_code == 400 and "encoded slash" in resp.text
    assert provider.seen == []


# -- endpoints that carry conversations under other URLs ----------------------------------


def test_message_batches_are_walked_as_messages(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    params = _leaky(gate_dirs, secret)
    client.messages.batches.create(
        requests=[
            {"custom_id": "a", "params": conversation(str(gate_dirs["project"]))},  # type: ignore[typeddict-item]
            {"custom_id": "b", "params": params},
        ]
    )  # type: ignore[typeddict-item]
    sent = provider.seen[-1].json()
    assert provider.seen[-1].path == "/v1/messages/batches"
    result = sent["requests"][1]["params"]["messages"][-1]["content"][0]["content"]
    assert RULE_PLACEHOLDER in result and secret not in json.dumps(sent)
    assert _rows(gate_dirs)[0]["withheld"][0]["kind"] == "tool-result"


@pytest.mark.filterwarnings("ignore:The Assistants API is deprecated:DeprecationWarning")
def test_assistants_messages_and_tool_outputs_are_screened(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    with openai.OpenAI(
        base_url=f"{gate.base_url}/openai/v1", api_key="sk-test-fake", max_retries=0
    ) as oai:
        oai.beta.threads.messages.create(
            "thread_1", role="user", content=f"the key is STRIPE_KEY={secret}"
        )
        oai.beta.threads.runs.submit_tool_outputs(
            "run_1",
            thread_id="thread_1",
            tool_outputs=[{"tool_call_id": "call_1", "output": f"STRIPE_KEY={secret}"}],
        )
        oai.beta.threads.create_and_run(
            assistant_id="asst_1",
            thread={"messages": [{"role": "user", "content": f"STRIPE_KEY={secret}"}]},
        )
    assert len(provider.seen) == 3
    assert all(secret.encode() not in s.body for s in provider.seen)
    assert [r["path"] for r in _rows(gate_dirs)[::-1]] == [
        "/v1/threads/thread_1/messages",
        "/v1/threads/thread_1/runs/run_1/submit_tool_outputs",
        "/v1/threads/runs",
    ]


def test_gemini_cached_contents_are_walked_as_requests(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    project = str(gate_dirs["project"])
    body = gemini_conversation(
        project,
        gemini_tool_turn(
            "read_file", {"absolute_path": f"{project}/.env"}, f"STRIPE_KEY={secret}", call_id="c1"
        ),
    )
    body["model"] = "models/gemini-2.5-pro"
    resp = httpx.post(f"{gate.base_url}/anthropic/v1beta/cachedContents", json=body)
    assert resp.status_code == 200
    sent = provider.seen[-1].body.decode()
    assert secret not in sent and RULE_PLACEHOLDER in sent


def test_a_binary_upload_is_blocked_and_says_how_to_let_it_through(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    # Text uploads are screened (tests/proxy/test_uploads.py); bytes gate cannot read are not.
    with (
        openai.OpenAI(
            base_url=f"{gate.base_url}/openai/v1", api_key="sk-test-fake", max_retries=0
        ) as oai,
        pytest.raises(openai.BadRequestError) as err,
    ):
        oai.files.create(file=("batch.jsonl", b"\x00\xff" + secret.encode()), purpose="batch")
    assert "unsafe_pass_non_json" in str(err.value)
    assert provider.seen == []


# -- the query ---------------------------------------------------------------------------


def test_a_query_that_holds_a_finding_is_refused_and_not_stored(
    client: anthropic.Anthropic,
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
) -> None:
    client.messages.create(**conversation(str(gate_dirs["project"])))  # indexes the project
    for query in (f"?note=STRIPE_KEY%3D{secret}", f"?a=1&b=%73{secret[1:]}"):
        resp = httpx.post(
            f"{gate.base_url}/anthropic/v1/messages{query}",
            json=conversation(str(gate_dirs["project"])),
        )
        assert resp.status_code == 400 and "query string" in resp.text
    assert len(provider.seen) == 1
    rows = _rows(gate_dirs)
    assert [r["path"] for r in rows[:2]] == ["/v1/messages?[withheld]"] * 2
    assert secret[1:] not in json.dumps(rows)


def test_gemini_api_key_in_the_query_passes_and_is_never_stored(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    key = "AIza" + os.urandom(16).hex()[:35]
    resp = httpx.post(
        f"{gate.base_url}/anthropic/v1beta/models/g:generateContent?key={key}",
        json={"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    )
    assert resp.status_code == 200 and key in provider.seen[-1].path
    assert _rows(gate_dirs)[0]["path"] == "/v1beta/models/g:generateContent?key=***"


# -- nothing disclosed -------------------------------------------------------------------


@pytest.fixture
def log_lines() -> Iterator[list[str]]:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="DEBUG")
    yield lines
    logger.remove(sink)


def test_block_reasons_logs_and_audit_never_quote_a_value_that_held_a_finding(
    client: anthropic.Anthropic,
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    log_lines: list[str],
) -> None:
    body = _leaky(gate_dirs, secret)
    client.messages.create(**conversation(str(gate_dirs["project"])))  # indexes the project
    # A result answering a call id that holds the value: the refusal names the id.
    body["messages"].append(
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": f"toolu_{secret}", "content": "x"}],
        }
    )
    resp = httpx.post(f"{gate.base_url}/anthropic/v1/messages", json=body)
    assert resp.status_code == 400 and "answers no tool call" in resp.text
    assert secret not in resp.text
    assert secret not in "\n".join(log_lines)
    assert secret not in json.dumps(_rows(gate_dirs))


def test_a_model_name_that_holds_a_finding_is_not_stored(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    client.messages.create(**conversation(str(gate_dirs["project"])))
    client.messages.create(
        **conversation(str(gate_dirs["project"]), model=f"claude-STRIPE_KEY={secret}")
    )
    assert secret.encode() not in provider.seen[-1].body
    row = _rows(gate_dirs)[0]
    assert row["model"] == "[withheld]" and secret not in json.dumps(row)


def test_health_answers_only_under_the_gates_own_host_and_names_no_path(
    gate: Listening, gate_dirs: dict[str, Path]
) -> None:
    url = f"{gate.base_url}/_gate/health"
    ok = httpx.get(url)
    assert ok.status_code == 200 and ok.json()["ok"] is True
    assert str(gate_dirs["data"]) not in ok.text and "/" not in json.dumps(ok.json()["instance"])
    assert set(ok.json()) == {"ok", "version", "instance", "forward", "shared"}
    for host in ("evil.example", f"evil.example:{gate.port}", "127.0.0.1:1"):
        refused = httpx.get(url, headers={"host": host})
        assert refused.status_code == 403 and "ok" not in refused.json()


# -- an upstream that does not answer ----------------------------------------------------


@pytest.fixture
def dead_gate(gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = replace(Config(), port=0, ask=AskConfig(mode="never")).with_upstreams(
        {n: parse_upstream(n, f"http://127.0.0.1:{port}") for n in ("anthropic", "openai")}
    )
    server = BackgroundGate(config, gate_dirs["data"])
    yield server.start()
    server.stop()


def test_an_unreachable_upstream_gives_each_sdk_its_error_shape_and_is_audited(
    dead_gate: Listening, gate_dirs: dict[str, Path]
) -> None:
    with (
        anthropic.Anthropic(
            base_url=f"{dead_gate.base_url}/anthropic", api_key="k", max_retries=0
        ) as a,
        pytest.raises(anthropic.APIStatusError) as ea,
    ):
        a.messages.create(**conversation(str(gate_dirs["project"])))
    assert ea.value.status_code == 502
    assert "could not get an answer from the upstream" in ea.value.message
    with (
        openai.OpenAI(base_url=f"{dead_gate.base_url}/openai/v1", api_key="k", max_retries=0) as o,
        pytest.raises(openai.APIStatusError) as eo,
    ):
        o.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert eo.value.status_code == 502
    assert "could not get an answer from the upstream" in eo.value.message
    resp = httpx.post(
        f"{dead_gate.base_url}/anthropic/v1beta/models/g:generateContent", json={"contents": []}
    )
    assert resp.json()["error"]["status"] == "UNAVAILABLE" and resp.json()["error"]["code"] == 502
    import time

    deadline = time.monotonic() + 10
    rows = _rows(gate_dirs)
    while any(r["error"] is None for r in rows):
        assert time.monotonic() < deadline
        time.sleep(0.05)
        rows = _rows(gate_dirs)
    assert len(rows) == 3 and all("connect" in r["error"].lower() for r in rows)
