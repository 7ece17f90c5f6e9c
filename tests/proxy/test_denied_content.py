"""A denied file's values never leave, whatever tool, channel or encoding carried them."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import openai
import pytest

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from gate.proxy.server import Listening
from messages import conversation, tool_turn


@pytest.fixture
def env_secret(gate_dirs: dict[str, Path]) -> str:
    secret = fake_secret("sk_live_")
    (gate_dirs["project"] / ".env").write_text(f"# app\nSTRIPE_KEY={secret}\nDEBUG=true\n")
    return secret


def _send(client: anthropic.Anthropic, provider: FakeProvider, body: dict[str, Any]) -> str:
    client.messages.create(**body)
    return provider.seen[-1].body.decode()


@pytest.mark.parametrize(
    ("command", "output"),
    [
        ("python3 -c \"import os; print(open(os.environ['F']).read())\"", "STRIPE_KEY={s}\n"),
        (
            "grep -rn STRIPE .",
            "./.env:2:STRIPE_KEY={s}\n./src/pay.py:3:key = os.environ['STRIPE_KEY']",
        ),
        ("base64 -w0 backup.txt", "{b64}"),  # a copy under an innocent name
        ("node -e 'console.log(process.env)'", "{{ STRIPE_KEY: '{s}', HOME: '/home/u' }}"),
    ],
)
def test_values_in_any_tool_output_are_replaced(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env_secret: str,
    command: str,
    output: str,
) -> None:
    project = str(gate_dirs["project"])
    b64 = base64.b64encode((gate_dirs["project"] / ".env").read_bytes()).decode()
    text = output.format(s=env_secret, b64=b64)
    sent = _send(
        client,
        provider,
        conversation(project, tool_turn("toolu_1", "Bash", {"command": command}, text)),
    )
    assert env_secret not in sent and b64[8:40] not in sent
    assert "[gate: withheld a value from .env (rule Read(./.env)" in sent


def test_at_file_mentions_assistant_echoes_and_user_text_are_covered(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path], env_secret: str
) -> None:
    project = str(gate_dirs["project"])
    body = conversation(project)
    body["messages"] = [
        # Claude Code inlines an @.env mention as a system-role message.
        {
            "role": "system",
            "content": "Called the Read tool with the following input: "
            f'{{"file_path": "{project}/.env"}}\nResult of calling the Read tool:\n'
            f"     2\tSTRIPE_KEY={env_secret}",
        },
        {"role": "user", "content": f"why does {env_secret} fail?"},
        {"role": "assistant", "content": f"The key {env_secret} looks revoked."},
        {"role": "user", "content": "ok"},
    ]
    sent = _send(client, provider, body)
    assert env_secret not in sent
    assert sent.count("[gate: withheld a value from .env") == 3
    row = next(AuditStore(gate_dirs["data"] / "audit.db").rows(1))
    assert row["withheld"] == [
        {
            "kind": "content",
            "call_id": None,
            "tool": None,
            "target": f"{project}/.env",
            "rule": "Read(./.env)",
            "where": row["withheld"][0]["where"],
            "count": 3,
        }
    ]
    assert env_secret not in json.dumps(row)


def test_a_value_inside_a_thinking_block_blocks_the_request(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path], env_secret: str
) -> None:
    body = conversation(str(gate_dirs["project"]))
    body["messages"] += [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": f"the key is {env_secret}", "signature": "c2ln"},
                {"type": "text", "text": "Checking."},
            ],
        },
        {"role": "user", "content": "go on"},
    ]
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(**body)
    assert "inside a signed or opaque field" in str(info.value)
    assert provider.seen == []


def test_other_formats_and_unknown_endpoints_are_covered(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], env_secret: str
) -> None:
    project = str(gate_dirs["project"])
    with openai.OpenAI(
        base_url=f"{gate.base_url}/openai/v1", api_key="sk-fake", max_retries=0
    ) as oai:
        oai.chat.completions.create(
            model="gpt-test",
            messages=[
                {"role": "system", "content": f"Working directory: {project}"},
                {"role": "user", "content": f"deploy with {env_secret}"},
            ],
        )
    assert env_secret not in provider.seen[-1].body.decode()
    # An endpoint gate has no walker for: every string is still screened. With no project
    # root known, home-anchored denied files (here a key in ~/.ssh) are still indexed.
    (gate_dirs["home"] / ".ssh").mkdir()
    key_line = "b3BlbnNzaC1" + fake_secret()
    (gate_dirs["home"] / ".ssh" / "id_ed25519").write_text(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{key_line}\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/embeddings",
        json={"model": "e", "input": [f"key: {key_line}"]},
        headers={"authorization": "Bearer sk-fake"},
    )
    assert provider.seen[-1].path == "/v1/embeddings", resp.text  # why it did not leave
    sent = provider.seen[-1].json()
    assert key_line not in json.dumps(sent)
    assert sent["input"][0].startswith("key: [gate: withheld a value from id_ed25519")


@pytest.mark.parametrize(
    "extra",
    [
        lambda s: {"messages": [{"role": "user", "content": "hi", "reasoning_content": s}]},
        lambda s: {"prediction": {"type": "content", "content": s}},
        lambda s: {"metadata": {"note": [s]}},
    ],
)
def test_fields_the_walker_does_not_know_are_screened(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], env_secret: str, extra: Any
) -> None:
    project = str(gate_dirs["project"])
    body = {
        "model": "gpt-test",
        "messages": [{"role": "system", "content": f"Working directory: {project}"}],
    }
    for key, value in extra(f"v={env_secret}").items():
        body[key] = body[key] + value if key == "messages" else value
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/chat/completions",
        json=body,
        headers={"authorization": "Bearer sk-fake"},
    )
    assert resp.status_code == 200
    assert env_secret not in provider.seen[-1].body.decode()


def test_a_denied_value_used_as_a_key_blocks(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], env_secret: str
) -> None:
    project = str(gate_dirs["project"])
    body = {
        "model": "gpt-test",
        "messages": [
            {"role": "system", "content": f"Working directory: {project}"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "x", "arguments": json.dumps({env_secret: 1})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
    }
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/chat/completions",
        json=body,
        headers={"authorization": "Bearer sk-fake"},
    )
    # The arguments string is screened as text (the value is replaced inside it); a key of
    # the body itself would block.
    assert resp.status_code == 200 and env_secret not in provider.seen[-1].body.decode()
    body2 = {"model": "gpt-test", "messages": body["messages"][:1], "metadata": {env_secret: 1}}
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/chat/completions",
        json=body2,
        headers={"authorization": "Bearer sk-fake"},
    )
    assert resp.status_code == 400 and "JSON key" in resp.json()["error"]["message"]


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/openai/v1/embeddings", {"model": "e", "input": [[115, 107, 95, 108, 105, 118, 101]]}),
        ("/openai/v1/embeddings", {"model": "e", "input": [1, 2, 3]}),
        ("/openai/v1/completions", {"model": "c", "prompt": [8, 9, 10, 11]}),
        ("/openai/v1/completions", {"model": "c", "prompt": ["text", [12, 13]]}),
    ],
)
def test_token_ids_are_refused_because_any_text_can_be_sent_as_them(
    gate: Listening, provider: FakeProvider, path: str, body: dict[str, Any]
) -> None:
    resp = httpx.post(
        f"{gate.base_url}{path}", json=body, headers={"authorization": "Bearer sk-fake"}
    )
    assert resp.status_code >= 400 and "token ids" in resp.text
    assert provider.seen == []  # nothing left


def test_text_prompts_and_chat_are_not_taken_for_token_ids(
    gate: Listening, provider: FakeProvider
) -> None:
    for path, body in (
        ("/openai/v1/embeddings", {"model": "e", "input": ["some text", "more"]}),
        ("/openai/v1/completions", {"model": "c", "prompt": "def f():", "max_tokens": 8}),
    ):
        httpx.post(f"{gate.base_url}{path}", json=body, headers={"authorization": "Bearer sk-fake"})
    assert [s.path for s in provider.seen] == ["/v1/embeddings", "/v1/completions"]
