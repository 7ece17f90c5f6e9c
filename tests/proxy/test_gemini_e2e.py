"""Gemini requests, shaped like Gemini CLI's, through a real gate listener to a fake upstream."""

from __future__ import annotations

import base64
import copy
import json
import os
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from click.testing import CliRunner

from conftest import fake_secret
from gate.audit.store import AuditStore
from gate.cli import cli
from gate.config import Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening
from gemini_messages import code_assist, conversation, tool_turn
from gemini_upstream import USAGE, FakeGemini
from validity import check_rewrite

MODEL = "/v1beta/models/gemini-2.5-pro"


@pytest.fixture
def upstream() -> Iterator[FakeGemini]:
    fake = FakeGemini().start()
    yield fake
    fake.stop()


@pytest.fixture
def gemini_gate(upstream: FakeGemini, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    """A real gate listener on 127.0.0.1 whose gemini upstream is the fake."""
    config = replace(Config(), port=0, projects=(str(gate_dirs["project"]),)).with_upstreams(
        {name: parse_upstream(name, upstream.url) for name in ("gemini", "code-assist")}
    )
    server = BackgroundGate(config, gate_dirs["data"])
    listening = server.start()
    yield listening
    server.stop()


def compact(body: Any) -> bytes:
    """JSON as Gemini CLI's JSON.stringify writes it: no spaces, non-ASCII kept."""
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


def stream(
    gate: Listening, path: str, body: Any, prefix: str = "gemini"
) -> tuple[str, list[float]]:
    """POST a streaming request; the text it streams back and when each chunk arrived."""
    text, arrived = "", []
    with httpx.stream(
        "POST",
        f"{gate.base_url}/{prefix}{path}",
        content=compact(body),
        headers={
            "content-type": "application/json",
            "x-goog-api-key": "fake-" + os.urandom(6).hex(),
        },
        timeout=30,
    ) as resp:
        assert resp.status_code == 200, resp.read()
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line.startswith("data:"):
                arrived.append(time.monotonic())
                chunk = json.loads(line[5:])
                chunk = chunk.get("response", chunk)  # Code Assist wraps each chunk
                text += chunk["candidates"][0]["content"]["parts"][0]["text"]
    return text, arrived


def audit_rows(gate_dirs: dict[str, Path], n: int = 5) -> list[dict[str, Any]]:
    """The newest rows, once the newest has its response: gate records that after the
    client may already have read the whole body."""
    store = AuditStore(gate_dirs["data"] / "audit.db")
    deadline = time.monotonic() + 5
    while (rows := list(store.rows(n)))[0]["status"] is None and time.monotonic() < deadline:
        time.sleep(0.02)
    return rows


def test_generate_content_and_count_tokens_pass_through_untouched(
    gemini_gate: Listening, upstream: FakeGemini, gate_dirs: dict[str, Path]
) -> None:
    key = "fake-" + os.urandom(6).hex()
    raw = b'{ "contents" : [{"role":"user","parts":[{"text":"caf\\u00e9"}]}] }'
    resp = httpx.post(
        f"{gemini_gate.base_url}/gemini{MODEL}:generateContent?key={key}",
        content=raw,
        headers={"content-type": "application/json"},
    )
    assert resp.status_code == 200
    assert resp.json()["candidates"][0]["content"]["parts"][0]["text"] == upstream.reply_text
    seen = upstream.seen[-1]
    assert (seen.path, seen.body) == (f"{MODEL}:generateContent?key={key}", raw)
    row = audit_rows(gate_dirs)[0]
    assert (
        row["verdict"],
        row["status"],
        row["input_tokens"],
        row["output_tokens"],
        row["cache_read_tokens"],
    ) == ("forwarded", 200, 31, 7, 5)
    assert key not in row["path"]  # the API key in the query is never written down

    resp = httpx.post(
        f"{gemini_gate.base_url}/gemini{MODEL}:countTokens",
        content=raw,
        headers={"content-type": "application/json"},
    )
    assert resp.json() == {"totalTokens": len(raw) // 4}
    assert upstream.seen[-1].body == raw


def test_stream_is_relayed_as_it_arrives_and_usage_reaches_the_log(
    gemini_gate: Listening, upstream: FakeGemini, gate_dirs: dict[str, Path]
) -> None:
    upstream.sse_delay = 0.15  # six chunks: the stream takes about a second
    text, arrived = stream(
        gemini_gate,
        f"{MODEL}:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    )
    assert text == upstream.reply_text
    assert upstream.streams_finished[0] - arrived[0] > 0.5  # the first chunk was not held
    audit_rows(gate_dirs)  # wait for the response to be recorded
    result = CliRunner().invoke(cli, ["log", "--json"])
    row = json.loads(result.stdout)["requests"][0]
    assert (row["status"], row["input_tokens"], row["output_tokens"]) == (
        200,
        USAGE["promptTokenCount"],
        USAGE["candidatesTokenCount"],
    )


def _cli_conversation(project: str, secrets: tuple[str, str], signature: str) -> dict[str, Any]:
    body = conversation(
        project,
        tool_turn(
            "read_file",
            {"file_path": f"{project}/src/app.py"},
            "print('ok')\n",
            response_id="read_file-1748-a1",
            signature=signature,
        ),
        tool_turn(
            "read_file",
            {"file_path": f"{project}/.env"},
            f"API_TOKEN={secrets[0]}\n",
            response_id="read_file-1749-b2",
        ),
        tool_turn(
            "run_shell_command",
            {"command": "cat .env", "description": "Show .env"},
            f"Command: cat .env\nDirectory: (root)\nOutput: KEY={secrets[1]}\n"
            "Error: (none)\nExit Code: 0",
            response_id="run_shell_command-1750-c3",
        ),
    )
    body["contents"] += [
        {
            "role": "model",
            "parts": [
                {"text": "The user wants the config.", "thought": True},
                {"text": "I read the files.", "thoughtSignature": signature},
            ],
        },
        {"role": "user", "parts": [{"text": "thanks"}]},
    ]
    return body


def test_gemini_cli_reads_of_env_are_withheld_in_place(
    gemini_gate: Listening, upstream: FakeGemini, gate_dirs: dict[str, Path]
) -> None:
    project = str(gate_dirs["project"])
    secrets = (fake_secret("tok_"), fake_secret())
    signature = base64.b64encode(os.urandom(96)).decode()  # opaque, with + and /
    body = _cli_conversation(project, secrets, signature)
    text, _ = stream(gemini_gate, f"{MODEL}:streamGenerateContent?alt=sse", body)
    assert text == upstream.reply_text

    seen = upstream.seen[-1]
    sent = seen.json()
    assert not any(s.encode() in seen.body for s in secrets)
    read = sent["contents"][5]["parts"][0]["functionResponse"]
    shell = sent["contents"][7]["parts"][0]["functionResponse"]
    assert (read["id"], read["name"], list(read["response"])) == (
        "read_file-1749-b2",
        "read_file",
        ["output"],
    )
    assert "Read(./.env)" in read["response"]["output"]
    assert "rules/default.yaml:" in read["response"]["output"]
    assert (
        f"reads {project}/.env, which is denied by rule Read(./.env)" in shell["response"]["output"]
    )
    # Everything else arrives exactly as Gemini CLI wrote it, byte for byte: the
    # session context, the other results, and both thought signatures.
    expected = copy.deepcopy(body)
    expected["contents"][5]["parts"][0]["functionResponse"]["response"] = read["response"]
    expected["contents"][7]["parts"][0]["functionResponse"]["response"] = shell["response"]
    assert seen.body == compact(expected)
    assert seen.body.count(f'"thoughtSignature":"{signature}"'.encode()) == 2
    check_rewrite(seen.path, body, sent)

    row = audit_rows(gate_dirs)[0]
    assert row["verdict"] == "modified"
    assert [(w["tool"], w["target"], w["rule"]) for w in row["withheld"]] == [
        ("read_file", f"{project}/.env", "Read(./.env)"),
        ("run_shell_command", f"{project}/.env", "Read(./.env)"),
    ]
    assert row["body"].encode() == seen.body  # the audit holds exactly what was sent
    assert row["project_root"] == project  # from the <session_context> turn
    assert (row["input_tokens"], row["output_tokens"]) == (31, 7)


# Gemini CLI signed in with Google reaches Code Assist through the `code-assist` upstream
# (`gate run` sets CODE_ASSIST_ENDPOINT); a user may also point it at /gemini.
@pytest.mark.parametrize("prefix", ["code-assist", "gemini"])
def test_code_assist_requests_are_screened_inside_their_wrapper(
    gemini_gate: Listening, upstream: FakeGemini, gate_dirs: dict[str, Path], prefix: str
) -> None:
    project = str(gate_dirs["project"])
    secret = fake_secret()
    body = code_assist(
        conversation(
            project,
            tool_turn("read_file", {"file_path": f"{project}/.env"}, f"KEY={secret}", call_id="c1"),
        )
    )
    text, _ = stream(gemini_gate, "/v1internal:streamGenerateContent?alt=sse", body, prefix)
    assert text == upstream.reply_text
    seen = upstream.seen[-1]
    assert seen.path == "/v1internal:streamGenerateContent?alt=sse"
    assert secret.encode() not in seen.body
    result = seen.json()["request"]["contents"][3]["parts"][0]["functionResponse"]
    assert "Read(./.env)" in result["response"]["output"]
    check_rewrite(seen.path, body, seen.json())
    row = audit_rows(gate_dirs)[0]
    assert (row["model"], row["verdict"], row["input_tokens"]) == ("gemini-2.5-pro", "modified", 31)


def test_an_unpaired_function_response_is_blocked_with_a_google_error(
    gemini_gate: Listening, upstream: FakeGemini, gate_dirs: dict[str, Path]
) -> None:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "read_file-1-x",
                            "name": "read_file",
                            "response": {"output": "KEY=" + fake_secret()},
                        }
                    }
                ],
            },
        ]
    }
    resp = httpx.post(f"{gemini_gate.base_url}/gemini{MODEL}:generateContent", json=body)
    assert resp.status_code == 400
    assert resp.headers["x-gate-blocked"] == "1"
    error = resp.json()["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    assert error["message"].startswith("gate blocked this request: gate cannot screen")
    assert "read_file-1-x answers no tool call" in error["message"]
    assert upstream.seen == []
    assert audit_rows(gate_dirs)[0]["verdict"] == "blocked"
