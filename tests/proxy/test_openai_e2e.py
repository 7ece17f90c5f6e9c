"""The openai SDK (Chat Completions and Responses) through a real gate to the fake provider."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from conftest import fake_secret, finished_row
from fake_provider import FakeProvider
from gate.proxy.server import Listening
from validity import check_rewrite


@pytest.fixture
def oai(gate: Listening) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(
        base_url=f"{gate.base_url}/openai/v1", api_key="sk-test-fake", max_retries=0
    ) as client:
        yield client


def _chat_history(project: str, secret: str) -> list[dict[str, Any]]:
    env_text = f"<environment_context>\n  <cwd>{project}</cwd>\n</environment_context>"
    return [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": env_text},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {
                        "name": "read",
                        "arguments": json.dumps({"filePath": f"{project}/.env"}),
                    },
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": "cat .env"})},
                },
                {
                    "id": "call_3",
                    "type": "function",
                    "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": f"1: TOKEN={secret}"},
        {
            "role": "tool",
            "tool_call_id": "call_2",
            "content": [{"type": "text", "text": f"TOKEN={secret}"}],
        },
        {"role": "tool", "tool_call_id": "call_3", "content": "README.md\n.env"},
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_chat_completions_withhold_denied_reads_and_shell_output(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path], stream: bool
) -> None:
    project, secret = str(gate_dirs["project"]), fake_secret()
    messages = _chat_history(project, secret)
    if stream:
        chunks = oai.chat.completions.create(
            model="gpt-test", messages=messages, stream=True, stream_options={"include_usage": True}
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    else:
        reply = oai.chat.completions.create(model="gpt-test", messages=messages)
        text = reply.choices[0].message.content
    assert text == provider.reply_text
    seen = provider.seen[-1]
    assert seen.path == "/v1/chat/completions"
    assert secret not in seen.body.decode()
    sent = seen.json()
    check_rewrite("/v1/chat/completions", _as_sent(messages, sent), sent)
    assert "Read(./.env)" in sent["messages"][3]["content"]
    assert sent["messages"][4]["content"][0]["type"] == "text"  # a list stays a list
    assert "reads " + project + "/.env" in sent["messages"][4]["content"][0]["text"]
    assert sent["messages"][5]["content"] == "README.md\n.env"
    row = finished_row(gate_dirs["data"])
    assert (row["input_tokens"], row["output_tokens"]) == (30, 6)
    assert [w["tool"] for w in row["withheld"]] == ["read", "bash"]


def _as_sent(messages: list[dict[str, Any]], sent: dict[str, Any]) -> dict[str, Any]:
    """The body as the SDK sent it, before gate: `sent` with the original messages."""
    return {**copy.deepcopy(sent), "messages": messages}


@pytest.mark.parametrize("stream", [False, True])
def test_responses_withhold_function_and_shell_outputs(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path], stream: bool
) -> None:
    project, secret = str(gate_dirs["project"]), fake_secret()
    items: list[dict[str, Any]] = [
        {
            "type": "message",
            "role": "user",
            "content": [
                {
                    "type": "input_text",
                    "text": (
                        f"<environment_context>\n  <cwd>{project}</cwd>\n</environment_context>"
                    ),
                }
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [],
            "encrypted_content": "gAAAAB" + "x" * 40,
        },
        {
            "type": "function_call",
            "call_id": "call_a",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": "sed -n 1,20p .env", "workdir": project}),
        },
        {"type": "function_call_output", "call_id": "call_a", "output": f"K={secret}"},
        {
            "type": "local_shell_call",
            "id": "ls_1",
            "call_id": "call_b",
            "status": "completed",
            "action": {"type": "exec", "command": ["bash", "-lc", "cat ~/.ssh/id_ed25519"]},
        },
        {
            "type": "local_shell_call_output",
            "id": "ls_1",
            "call_id": "call_b",
            "output": json.dumps({"output": f"-----BEGIN KEY-----{secret}"}),
        },
        {
            "type": "function_call",
            "call_id": "call_c",
            "name": "exec_command",
            "arguments": json.dumps({"cmd": "git status"}),
        },
        {"type": "function_call_output", "call_id": "call_c", "output": "clean"},
    ]
    if stream:
        with oai.responses.stream(model="gpt-test", input=items) as events:
            text = events.get_final_response().output_text
    else:
        text = oai.responses.create(model="gpt-test", input=items).output_text
    assert text == provider.reply_text
    seen = provider.seen[-1]
    assert seen.path == "/v1/responses" and secret not in seen.body.decode()
    sent = seen.json()
    check_rewrite("/v1/responses", {**copy.deepcopy(sent), "input": items}, sent)
    assert "Read(./.env)" in sent["input"][3]["output"]
    assert "Read(~/.ssh/**)" in sent["input"][5]["output"]
    assert sent["input"][7]["output"] == "clean"
    assert sent["input"][1] == items[1]  # reasoning with encrypted_content untouched
    row = finished_row(gate_dirs["data"])
    assert (row["input_tokens"], row["output_tokens"]) == (40, 6)


def test_responses_with_previous_response_id_screens_new_outputs(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """Over a stateful chain the call lives on the server: the output still cannot be
    paired, so it is left for content screening, and the request is not refused."""
    secret = fake_secret()
    items = [{"type": "function_call_output", "call_id": "call_old", "output": f"K={secret}"}]
    oai.responses.create(model="gpt-test", input=items, previous_response_id="resp_prev")
    assert provider.seen[-1].json()["previous_response_id"] == "resp_prev"


def test_errors_are_openai_shaped(oai: openai.OpenAI, provider: FakeProvider) -> None:
    items = [{"type": "function_call_output", "call_id": "nobody", "output": "x"}]
    with pytest.raises(openai.BadRequestError) as info:
        oai.responses.create(model="gpt-test", input=items)
    err = info.value.body
    assert isinstance(err, dict) and err["type"] == "gate_error"
    assert "answers no tool call" in err["message"]
    assert provider.seen == []


@pytest.mark.parametrize("stream", [False, True])
def test_a_stored_responses_chain_pairs_outputs_with_calls_the_model_made(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path], stream: bool
) -> None:
    """The model's call arrives in a response; the next request sends only the output with
    previous_response_id. gate read the call as the response streamed past, so the output
    is decided by the rules like a call paired in the body."""
    project, secret = str(gate_dirs["project"]), fake_secret()
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_env",
        "status": "completed",
        "name": "exec_command",
        "arguments": json.dumps({"cmd": "cat .env", "workdir": project}),
    }
    original = provider.response
    provider.response = lambda req: {
        **original(req),
        "id": "resp_chain",  # type: ignore[method-assign]
        "output": [call],
    }
    if stream:
        with oai.responses.stream(model="gpt-test", input="read the env") as events:
            events.get_final_response()
    else:
        oai.responses.create(model="gpt-test", input="read the env")
    provider.response = original  # type: ignore[method-assign]
    oai.responses.create(
        model="gpt-test",
        previous_response_id="resp_chain",
        input=[{"type": "function_call_output", "call_id": "call_env", "output": f"K={secret}"}],
    )
    sent = provider.seen[-1].json()
    assert secret not in provider.seen[-1].body.decode()
    output = sent["input"][0]["output"]
    assert f"reads {project}/.env, which is denied by rule Read(./.env)" in output
