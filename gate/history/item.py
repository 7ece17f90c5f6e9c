"""One string found in a store, with enough around it for its agent to say what it was."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from gate.history.model import Store

JsonKey = str | int


@dataclass(frozen=True, slots=True, kw_only=True)
class Item:
    store: Store
    path: tuple[JsonKey, ...] = ()  # JSON path within the line, document or column
    doc: Any = None  # the parsed line or document, or the row as a dict
    line: int | None = None  # JSONL or text line, 1-based
    table: str | None = None
    rowid: int | None = None
    column: str | None = None
    calls: Mapping[str, str] = field(default_factory=dict)  # tool call id → tool name

    def at(self) -> str:
        """Where a person finds it: the line and JSON path, or the table, row and column."""
        spot = json_path(self.path) if self.path else ""
        if self.table is not None:
            return f"{self.table} row {self.rowid} {self.column}{spot and ' ' + spot}"
        if self.line is not None:
            return f"line {self.line}{spot and ' ' + spot}"
        return spot or "whole file"

    def up(self, levels: int) -> Any:
        """The JSON value `levels` above the string (1: the object holding it)."""
        return value_at(self.doc, self.path[: max(0, len(self.path) - levels)])


def json_path(path: tuple[JsonKey, ...]) -> str:
    return "$" + "".join(f"[{k}]" if isinstance(k, int) else f".{k}" for k in path)


def value_at(doc: Any, path: tuple[JsonKey, ...]) -> Any:
    for key in path:
        try:
            doc = doc[key]
        except (KeyError, IndexError, TypeError):
            return None
    return doc


def strings(doc: Any, path: tuple[JsonKey, ...] = ()) -> Iterator[tuple[tuple[JsonKey, ...], str]]:
    """Every string in a JSON value (keys too: a pasted token can become a key), with its
    path, depth first, without recursion limits on deep documents."""
    stack: list[tuple[tuple[JsonKey, ...], Any]] = [(path, doc)]
    while stack:
        here, value = stack.pop()
        if isinstance(value, str):
            yield here, value
        elif isinstance(value, dict):
            for k, v in reversed(list(value.items())):
                if len(k) >= 8:
                    yield here, k
                stack.append(((*here, k), v))
        elif isinstance(value, list):
            stack.extend(((*here, i), v) for i, v in reversed(list(enumerate(value))))


def first(doc: Any, *paths: tuple[JsonKey, ...]) -> Any:
    """The first of several paths that holds a value."""
    for p in paths:
        if (v := value_at(doc, p)) is not None:
            return v
    return None
