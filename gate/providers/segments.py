"""What a walker yields: every outbound string with its role, and tool calls paired with results."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

JsonPath = tuple[str | int, ...]


class Role(StrEnum):
    SYSTEM = "system"
    USER_TEXT = "user_text"
    ASSISTANT_TEXT = "assistant_text"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    ATTACHMENT = "attachment"
    # Signed or opaque: never edited (thinking, signatures, encrypted content, billing block).
    IMMUTABLE = "immutable"


@dataclass(frozen=True, slots=True)
class Segment:
    path: JsonPath
    text: str
    role: Role
    call_id: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCall:
    id: str
    name: str
    input: Mapping[str, Any]
    result: JsonPath | None  # where its result block sits in this body, if it is answered here


@dataclass(frozen=True, slots=True)
class Walk:
    format: str
    model: str | None
    segments: tuple[Segment, ...]
    calls: tuple[ToolCall, ...]

    def texts(self, *roles: Role) -> Iterator[str]:
        return (s.text for s in self.segments if not roles or s.role in roles)


def strings(node: Any, path: JsonPath) -> Iterator[tuple[JsonPath, str]]:
    """Every string in a JSON value, with its path (keys included only as containers)."""
    if isinstance(node, str):
        yield path, node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield from strings(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from strings(value, (*path, i))


def get_at(body: Any, path: JsonPath) -> Any:
    node = body
    for key in path:
        node = node[key]
    return node


def set_at(body: Any, path: JsonPath, value: Any) -> None:
    get_at(body, path[:-1])[path[-1]] = value
