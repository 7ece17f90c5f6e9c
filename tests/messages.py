"""Builders for Anthropic Messages bodies shaped like Claude Code's."""

from __future__ import annotations

from typing import Any


def system(cwd: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "text",
            "text": "x-anthropic-billing-header: cc_version=2.1.197; cc_entrypoint=cli;",
        },
        {
            "type": "text",
            "text": "You are Claude Code.\n# Environment\nYou have been invoked in"
            f" the following environment: \n - Primary working directory: {cwd}"
            "\n - Platform: linux",
            "cache_control": {"type": "ephemeral"},
        },
    ]


def tool_turn(
    call_id: str, name: str, tool_input: dict[str, Any], result: Any, **result_extra: Any
) -> list[dict[str, Any]]:
    """An assistant tool_use and the user tool_result answering it."""
    return [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": call_id, "name": name, "input": tool_input}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call_id, "content": result, **result_extra}
            ],
        },
    ]


def conversation(
    cwd: str, *turns: list[dict[str, Any]], model: str = "claude-test"
) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": "help me with this project"}]
    for t in turns:
        messages += t
    return {"model": model, "max_tokens": 64, "system": system(cwd), "messages": messages}
