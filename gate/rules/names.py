"""Rules by tool name (`Grep`, `mcp__server`, `mcp__server__*`, `*`) and by tool input
(`Agent(model:opus)`)."""

from __future__ import annotations

import re
from functools import lru_cache


def star_regex(text: str) -> str:
    """A pattern where only `*` is special (any sequence), as a regex for fullmatch.

    Each middle piece is found lazily inside an atomic group, as fnmatch does: the first
    place a literal piece fits is always a right one, so a command of any length and a
    pattern of many stars never backtrack into each other.
    """
    pieces = [re.escape(p) for p in text.split("*")]
    if len(pieces) == 1:
        return pieces[0]
    middle = "".join(f"(?>.*?{p})" for p in pieces[1:-1] if p)
    return f"{pieces[0]}{middle}.*{pieces[-1]}"


@lru_cache(maxsize=1024)
def compile_name(tool: str) -> re.Pattern[str]:
    """A rule's tool name as a regex over the name a tool call carries.

    `mcp__server` covers every tool of that server (`mcp__server__anything`); `*` in a name
    matches any sequence; any other name matches itself only.
    """
    if "*" in tool:
        return re.compile(star_regex(tool), re.S)
    if tool.startswith("mcp__") and "__" not in tool[len("mcp__") :]:
        return re.compile(re.escape(tool) + r"(?:__.+)?", re.S)
    return re.compile(re.escape(tool))


def name_matches(tool: str, called: str) -> bool:
    return bool(compile_name(tool).fullmatch(called))


@lru_cache(maxsize=1024)
def compile_param(spec: str) -> tuple[str, re.Pattern[str]]:
    """`param:value` as (param, regex over the input's value); `*` in the value is a
    wildcard, case matters, as in Claude Code."""
    name, value = spec.split(":", 1)
    return name, re.compile(star_regex(value), re.S)


def param_matches(spec: str, params: tuple[tuple[str, str], ...]) -> bool:
    name, pattern = compile_param(spec)
    return any(k == name and pattern.fullmatch(v) for k, v in params)


def params_of(tool_input: object) -> tuple[tuple[str, str], ...]:
    """A tool call's scalar inputs as (name, text) pairs: JSON spelling for booleans and
    null (`true`), the string itself for strings."""
    if not isinstance(tool_input, dict):
        return ()
    out = []
    for key, value in tool_input.items():
        if isinstance(value, bool) or value is None:
            out.append(
                (str(key), "true" if value is True else "false" if value is False else "null")
            )
        elif isinstance(value, str | int | float):
            out.append((str(key), str(value)))
    return tuple(out)
