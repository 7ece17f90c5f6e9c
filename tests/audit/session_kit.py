"""A long Claude Code style session, built at run time: each turn resends the whole
conversation plus one tool call and its result, with `cache_control` moved to the newest
message (as Claude Code does), so consecutive bodies differ early as well as at the end."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from typing import Any

_WORDS = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india",
          "juliet", "kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo",
          "sierra", "tango", "uniform", "victor", "whiskey", "xray"]


def _text(rand: random.Random, lines: int) -> str:
    return "\n".join(f"{i:>5}\t" + " ".join(rand.choices(_WORDS, k=rand.randint(4, 12)))
                     for i in range(1, lines + 1))


def tools() -> list[dict[str, Any]]:
    return [{"name": f"Tool{i}", "description": f"Does thing {i}. " * 40,
             "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
            for i in range(12)]


def bodies(turns: int, seed: int = 1, result_lines: int = 60,
           separators: tuple[str, str] = (",", ":")) -> Iterator[bytes]:
    """The request body of each turn, oldest first."""
    rand = random.Random(seed)
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "Fix the failing tests."}]}]
    for turn in range(1, turns + 1):
        for m in messages:
            for block in m["content"]:
                block.pop("cache_control", None)
        messages[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        yield json.dumps({
            "model": "claude-test", "max_tokens": 1024,
            "system": [{"type": "text", "text": "You are Claude Code. " * 50}],
            "tools": tools(), "metadata": {"user_id": "user_test"},
            "messages": messages, "stream": True}, separators=separators).encode()
        call = f"toolu_{seed}_{turn:04d}"
        messages += [
            {"role": "assistant", "content": [
                {"type": "text", "text": f"Step {turn}: reading a file."},
                {"type": "tool_use", "id": call, "name": "Read",
                 "input": {"file_path": f"/src/mod{turn}.py"}}]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": call,
                 "content": _text(rand, result_lines)}]}]
