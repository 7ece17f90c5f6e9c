"""The Messages walker: every string found with its role; results replaced in place only."""

from __future__ import annotations

import copy

from gate.providers import anthropic
from gate.providers.segments import Role
from messages import conversation, tool_turn


def test_walk_pairs_tool_calls_with_results_and_finds_every_string() -> None:
    body = conversation(
        "/p",
        tool_turn("toolu_1", "Read", {"file_path": "/p/a.py"}, "print(1)"),
        tool_turn("toolu_2", "Bash", {"command": "ls"}, [{"type": "text", "text": "a.py"}]),
    )
    body["messages"].append(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "tool_use", "id": "toolu_3", "name": "Read", "input": {"file_path": "x"}},
            ],
        }
    )
    walk = anthropic.walk(body)
    assert [(c.id, c.name, c.result) for c in walk.calls] == [
        ("toolu_1", "Read", ("messages", 2, "content", 0)),
        ("toolu_2", "Bash", ("messages", 4, "content", 0)),
        ("toolu_3", "Read", None),  # not answered in this body
    ]
    roles = {s.text: s.role for s in walk.segments}
    assert roles["print(1)"] is Role.TOOL_RESULT
    assert roles["a.py"] is Role.TOOL_RESULT
    assert roles["/p/a.py"] is Role.TOOL_CALL
    assert roles["hmm"] is Role.IMMUTABLE and roles["sig"] is Role.IMMUTABLE
    assert roles["help me with this project"] is Role.USER_TEXT
    assert walk.segments[0].role is Role.IMMUTABLE  # the billing block
    assert walk.model == "claude-test"


def test_withhold_string_content_keeps_id_position_and_cache_control() -> None:
    body = conversation(
        "/p",
        tool_turn(
            "toolu_1",
            "Read",
            {"file_path": "/p/.env"},
            "A=1",
            cache_control={"type": "ephemeral"},
            is_error=False,
        ),
    )
    before = copy.deepcopy(body)
    walk = anthropic.walk(body)
    assert walk.calls[0].result is not None
    anthropic.withhold_result(body, walk.calls[0].result, "[withheld]")
    block = body["messages"][2]["content"][0]
    assert block == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "[withheld]",
        "cache_control": {"type": "ephemeral"},
        "is_error": False,
    }
    before["messages"][2]["content"][0]["content"] = "[withheld]"
    assert body == before  # nothing else changed
    assert list(block) == ["type", "tool_use_id", "content", "cache_control", "is_error"]


def test_withhold_block_content_replaces_each_part_at_its_index() -> None:
    parts = [
        {"type": "text", "text": "KEY=1"},
        {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
            "cache_control": {"type": "ephemeral"},
        },
    ]
    body = conversation("/p", tool_turn("toolu_1", "Read", {"file_path": "/p/k.pem"}, parts))
    walk = anthropic.walk(body)
    assert walk.calls[0].result is not None
    anthropic.withhold_result(body, walk.calls[0].result, "[w]")
    assert body["messages"][2]["content"][0]["content"] == [
        {"type": "text", "text": "[w]"},
        {"type": "text", "text": "[w]", "cache_control": {"type": "ephemeral"}},
    ]


def test_matches_messages_paths_only() -> None:
    assert anthropic.matches("/v1/messages")
    assert anthropic.matches("/v1/messages?beta=true")
    assert anthropic.matches("/v1/messages/count_tokens?beta=true")
    assert not anthropic.matches("/v1/models")
    assert not anthropic.matches("/v1/messages/batches")


def test_system_string_and_system_role_messages_are_walked() -> None:
    body = {
        "model": "m",
        "system": "Working directory: /x",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
    }
    walk = anthropic.walk(body)
    assert [(s.text, s.role) for s in walk.segments] == [
        ("Working directory: /x", Role.SYSTEM),
        ("be brief", Role.SYSTEM),
        ("hi", Role.USER_TEXT),
    ]
