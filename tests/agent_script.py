"""What a scripted fake model says each turn: tool calls and text, in any wire format.

The real-CLI tests and the corpus capture drive every agent the same way: the model first
calls the agent's read tool on `.env`, then its shell tool with `cat .env`, then answers.
Which step comes next is read from how many tool results the agent sent back.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

RESPONSES, CHAT, GEMINI, ANTHROPIC = "openai-responses", "openai-chat", "gemini", "anthropic"


@dataclass(frozen=True)
class Call:
    """The model calls a tool; the id stays the same on every turn that replays it."""

    name: str
    args: dict[str, Any]
    id: str = field(default_factory=lambda: "call_gate_" + os.urandom(6).hex())
    custom: str | None = None  # free-form input (a Responses custom tool), instead of args


@dataclass(frozen=True)
class Say:
    text: str


Turn = Call | Say
# (format, request body) → what the model replies this turn (None: a default text).
Script = Callable[[str, dict[str, Any]], list[Turn] | None]


def tool_results(fmt: str, body: dict[str, Any]) -> int:
    """How many tool results a request body carries."""
    if fmt == RESPONSES:
        items = body.get("input")
        return (
            sum(
                1
                for i in items
                if isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output")
            )
            if isinstance(items, list)
            else 0
        )
    if fmt == CHAT:
        return sum(1 for m in body.get("messages") or () if m.get("role") == "tool")
    if fmt == GEMINI:
        contents = (body.get("request") or body).get("contents") or ()
        return sum(1 for c in contents for p in c.get("parts") or () if "functionResponse" in p)
    return sum(
        1
        for m in body.get("messages") or ()
        if isinstance(m.get("content"), list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    )


def has_tools(fmt: str, body: dict[str, Any]) -> bool:
    """Whether the request offers tools (Codex's code mode sends them as an input item)."""
    items = body.get("input") if fmt == RESPONSES else None
    if isinstance(items, list) and any(
        isinstance(i, dict) and i.get("type") == "additional_tools" for i in items
    ):
        return True
    return bool((body.get("request") or body).get("tools"))


def steps(*calls: Call, answer: str = "done") -> Script:
    """Reply with each call in turn (one per turn), then with `answer`.

    Requests without tools (titles, summaries, routing) get a short text, unless there
    are no calls to make (an agent without tools, like Aider).
    """

    def script(fmt: str, body: dict[str, Any]) -> list[Turn]:
        if calls and not has_tools(fmt, body):
            return [Say("ok")]
        n = tool_results(fmt, body)
        return [calls[n]] if n < len(calls) else [Say(answer)]

    return script
