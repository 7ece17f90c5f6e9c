"""The anthropic SDK through a real gate listener to the fake provider."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import anthropic
import httpx2 as httpx
import pytest

from conftest import fake_secret, finished_row
from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from gate.proxy.server import Listening
from messages import conversation, tool_turn


def test_non_streaming_message(client: anthropic.Anthropic, provider: FakeProvider) -> None:
    msg = client.messages.create(
        model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    )
    assert msg.content[0].type == "text" and msg.content[0].text == provider.reply_text
    assert msg.usage.input_tokens == 21
    seen = provider.seen[-1]
    assert seen.path == "/v1/messages"
    assert seen.headers["anthropic-version"]  # forwarded (exact bytes: the next test)
    assert seen.headers["host"] == provider.url.removeprefix("http://")


def test_streaming_message(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    with client.messages.stream(
        model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    ) as stream:
        text = "".join(stream.text_stream)
    assert text == provider.reply_text
    row = finished_row(gate_dirs["data"])
    assert (row["status"], row["input_tokens"], row["output_tokens"]) == (200, 21, 7)
    assert row["cache_read_tokens"] == 3


def test_count_tokens(client: anthropic.Anthropic, provider: FakeProvider) -> None:
    count = client.messages.count_tokens(
        model="claude-test", messages=[{"role": "user", "content": "hi"}]
    )
    assert count.input_tokens > 0
    assert provider.seen[-1].path == "/v1/messages/count_tokens"


def test_unchanged_request_is_forwarded_as_the_original_bytes(
    gate: Listening, provider: FakeProvider
) -> None:
    # Odd spacing and key order that a re-serialisation would lose.
    raw = (
        b'{ "model" : "claude-test",\n  "max_tokens": 8,'
        b' "messages": [{"role":"user","content":"caf\\u00e9"}] }'
    )
    resp = httpx.post(
        f"{gate.base_url}/anthropic/v1/messages?beta=true",
        content=raw,
        headers={
            "content-type": "application/json",
            "x-api-key": "sk-ant-x",
            "anthropic-beta": "foo-2025-01-01,bar-2025-02-02",
            "anthropic-version": "2023-06-01",
            "x-custom": "kept",
        },
    )
    assert resp.status_code == 200
    seen = provider.seen[-1]
    assert seen.body == raw
    assert seen.path == "/v1/messages?beta=true"
    assert seen.headers["anthropic-beta"] == "foo-2025-01-01,bar-2025-02-02"
    assert seen.headers["x-custom"] == "kept"


def test_read_of_env_is_withheld_in_place(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = str(gate_dirs["project"])
    secret = fake_secret("tok_")
    body = conversation(
        project,
        tool_turn("toolu_01", "Read", {"file_path": f"{project}/src/app.py"}, "print('ok')"),
        tool_turn(
            "toolu_02",
            "Read",
            {"file_path": f"{project}/.env"},
            f"     1\tAPI_TOKEN={secret}\n",
            cache_control={"type": "ephemeral"},
        ),
    )
    body["messages"].append(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "the user wants config", "signature": "c2ln"},
                {"type": "text", "text": "I read the files."},
            ],
        }
    )
    body["messages"].append({"role": "user", "content": "thanks"})
    client.messages.create(**body)
    sent = provider.seen[-1].json()
    result = sent["messages"][4]["content"][0]
    assert secret not in provider.seen[-1].body.decode()
    assert result["tool_use_id"] == "toolu_02"
    assert result["cache_control"] == {"type": "ephemeral"}
    assert "Read(./.env)" in result["content"] and "rules/default.yaml:" in result["content"]
    # Everything else arrives exactly as the client sent it.
    expected = json.loads(json.dumps(body))
    expected["messages"][4]["content"][0]["content"] = result["content"]
    assert sent == expected

    # The same request again gives byte-identical output (prompt caches keep working).
    first = provider.seen[-1].body
    client.messages.create(**body)
    assert provider.seen[-1].body == first

    rows = list(AuditStore(gate_dirs["data"] / "audit.db").rows(5))
    assert rows[0]["verdict"] == "modified"
    assert rows[0]["withheld"][0]["rule"] == "Read(./.env)"
    assert rows[0]["withheld"][0]["target"] == f"{project}/.env"
    assert rows[0]["body"].encode() == first  # the audit holds exactly what was sent
    assert rows[0]["project_root"] == project


def test_audit_is_owner_only_and_holds_no_auth_header(
    client: anthropic.Anthropic, gate_dirs: dict[str, Path]
) -> None:
    client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
    )
    data = gate_dirs["data"]
    blob = b""
    for path in [data, *data.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), (path, oct(mode))
        if path.is_file():
            blob += path.read_bytes()
    assert (data / "mitmproxy").is_dir() and (data / "audit.db").is_file()
    assert client.api_key.encode() not in blob


def test_unknown_prefix_gets_a_clear_404(gate: Listening, provider: FakeProvider) -> None:
    resp = httpx.post(f"{gate.base_url}/nope/v1/messages", json={})
    assert resp.status_code == 404
    assert "no upstream for '/nope/v1/messages'" in resp.json()["error"]["message"]
    assert "/anthropic" in resp.json()["error"]["message"]
    assert provider.seen == []


def test_unknown_run_id_is_blocked(gate: Listening, provider: FakeProvider) -> None:
    resp = httpx.post(
        f"{gate.base_url}/_run/0123456789abcdef/anthropic/v1/messages",
        json={"model": "m", "messages": []},
    )
    assert resp.status_code == 400
    assert resp.json()["error"]["type"] == "gate_error"
    assert "does not know run" in resp.json()["error"]["message"]
    assert provider.seen == []


def test_upstream_error_bodies_pass_through_verbatim(
    client: anthropic.Anthropic, provider: FakeProvider
) -> None:
    provider.fail_status = 529
    with pytest.raises(anthropic.APIStatusError) as info:
        client.messages.create(
            model="claude-test", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        )
    assert info.value.status_code == 529
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded (fake)"},
    }


@pytest.mark.parametrize(
    "command",
    [
        "cat .env",
        "cd config && cat ../.env",
        'F=.env; head -n 20 "$F"',
        "grep -v '^#' < .env",
        "timeout 5 sed -n 1,10p ./.env",
    ],
)
def test_shell_commands_that_read_a_denied_file_are_withheld(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path], command: str
) -> None:
    project = str(gate_dirs["project"])
    secret = fake_secret()
    body = conversation(
        project,
        tool_turn("toolu_1", "Bash", {"command": "ls -la"}, "total 0\n.env"),
        tool_turn("toolu_2", "Bash", {"command": command}, f"KEY={secret}\n"),
    )
    client.messages.create(**body)
    sent = provider.seen[-1].json()
    assert secret not in provider.seen[-1].body.decode()
    assert sent["messages"][2]["content"][0]["content"] == "total 0\n.env"  # left alone
    text = sent["messages"][4]["content"][0]["content"]
    assert f"reads {project}/.env, which is denied by rule Read(./.env)" in text


def test_an_agent_in_a_subdirectory_is_held_to_the_repository_rules(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    repo = gate_dirs["project"]
    (repo / ".git").mkdir()
    (repo / "services" / "api").mkdir(parents=True)
    secret = fake_secret()
    body = conversation(
        str(repo / "services" / "api"),
        tool_turn("toolu_1", "Bash", {"command": "cat ../../.env"}, f"KEY={secret}"),
    )
    client.messages.create(**body)
    assert secret not in provider.seen[-1].body.decode()
    assert "Read(./.env)" in provider.seen[-1].body.decode()


def test_large_bodies_are_compressed_after_sending_and_read_back_exactly(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    import sqlite3
    import time

    big = "x" * (300 << 10) + fake_secret()
    client.messages.create(
        model="claude-test", max_tokens=8, messages=[{"role": "user", "content": big}]
    )
    sent = provider.seen[-1].body
    db = sqlite3.connect(gate_dirs["data"] / "audit.db")
    deadline = time.monotonic() + 10
    # The body's new chunks are stored as one block, written raw when large, packed after.
    while db.execute("SELECT COUNT(*) FROM blocks WHERE codec != 'zstd'").fetchone()[0]:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    size = db.execute("SELECT SUM(LENGTH(data)) FROM blocks").fetchone()[0]
    assert size < len(sent) // 10
    assert finished_row(gate_dirs["data"])["body"].encode() == sent  # type: ignore[union-attr]


def test_an_ask_rule_withholds_and_says_that_the_user_did_not_approve(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("ask:\n  - Read(./docs/customers.csv)\n")
    body = conversation(
        str(project),
        tool_turn("toolu_1", "Read", {"file_path": f"{project}/docs/customers.csv"}, "alice,42"),
    )
    client.messages.create(**body)
    result = provider.seen[-1].json()["messages"][2]["content"][0]["content"]
    assert "needs the user's approval under rule Read(./docs/customers.csv)" in result
    assert ".gate/rules.yaml:2" in result and "the user did not approve sending it" in result
    assert "alice" not in provider.seen[-1].body.decode()
