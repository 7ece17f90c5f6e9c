"""A long Claude Code style session, built at run time: each turn resends the whole
conversation plus one tool call and its result, with `cache_control` moved to the newest
message (as Claude Code does), so consecutive bodies differ early as well as at the end.
Used by the audit tests and by bench/audit.py."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from typing import Any

_WORDS = [
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
]


def conversation(
    turns: int,
    base: dict[str, Any],
    result: Callable[[int], tuple[str, str]],
    tail: str = "",
    separators: tuple[str, str] = (",", ":"),
    prefix: str = "toolu_",
) -> Iterator[bytes]:
    """The body of each turn, oldest first: `base` (model, system, tools...) plus the
    messages; `result(turn)` gives the file read on that turn and its content. `tail` adds a
    text block to the last turn's newest message."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Fix the failing tests."}]}
    ]
    for turn in range(1, turns + 1):
        for m in messages:
            for block in m["content"]:
                block.pop("cache_control", None)
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        if turn == turns and tail:
            messages[-1]["content"].insert(0, {"type": "text", "text": tail})
        yield json.dumps(
            {**base, "messages": messages, "stream": True}, separators=separators
        ).encode()
        name, content = result(turn)
        call = f"{prefix}{turn:04d}"
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Step {turn}: reading {name}."},
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Read",
                        "input": {"file_path": f"/src/{name}"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call, "content": content}],
            },
        ]


def bodies(
    turns: int, seed: int = 1, result_lines: int = 60, separators: tuple[str, str] = (",", ":")
) -> Iterator[bytes]:
    """A session whose tool results are numbered lines of random words."""
    rand = random.Random(seed)
    base = {
        "model": "claude-test",
        "max_tokens": 1024,
        "system": [{"type": "text", "text": "You are Claude Code. " * 50}],
        "tools": [
            {
                "name": f"Tool{i}",
                "description": f"Does thing {i}. " * 40,
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
            }
            for i in range(12)
        ],
        "metadata": {"user_id": "user_test"},
    }

    def result(turn: int) -> tuple[str, str]:
        return f"mod{turn}.py", "\n".join(
            f"{i:>5}\t" + " ".join(rand.choices(_WORDS, k=rand.randint(4, 12)))
            for i in range(1, result_lines + 1)
        )

    return conversation(turns, base, result, separators=separators, prefix=f"toolu_{seed}_")
