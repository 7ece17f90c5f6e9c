"""Where a conversation's messages sit in a request's raw bytes, and a rewritten body put
together from its parts.

Offsets are found by stepping through the body with the standard library's C JSON scanner
over the bytes read as Latin-1: one character per byte, so every offset is a byte offset;
JSON's structure is ASCII, so multi-byte UTF-8 inside strings is just more characters.
The values it builds on the way are thrown away: the body was parsed properly already.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

_DECODER = json.JSONDecoder()
# The C string scanner (not in the typing stubs): a JSON string at an offset, and its end.
_SCANSTRING: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_WS = re.compile(r"[ \t\n\r]*")
KEY = "messages"


@dataclass(frozen=True, slots=True)
class Layout:
    start: int  # just past the messages array's "["
    close: int  # its "]"
    ends: tuple[int, ...]  # just past each message


def layout(raw: bytes, parsed: list[Any] | None = None) -> Layout | None:
    """Where the top-level `messages` array and each of its items end in a JSON object body
    already parsed (so valid); None for a body of another shape or a repeated key.

    `parsed`, the messages as parsed (unedited), lets a message written as orjson writes it
    (compact, as JavaScript's JSON.stringify and httpx write it) be found by one compare
    instead of a scan: a JSON value ends where its own bytes end.
    """
    text = raw.decode("latin-1")
    try:
        i = _WS.match(text, 0).end()  # type: ignore[union-attr]
        if text[i] != "{":
            return None
        found: Layout | None = None
        keys: set[str] = set()
        i += 1
        while True:
            i = _skip(text, i)
            if text[i] == "}":
                return found
            key, i = _SCANSTRING(text, i + 1)
            if key in keys:
                return None  # which copy counts is the parser's call: leave it alone
            keys.add(key)
            i = _skip(text, _skip(text, i) + 1)  # past ":"
            if key == KEY and text[i] == "[":
                ends = items(text, i + 1, 0, raw, parsed)
                close = _skip(text, ends[-1] if ends else i + 1)
                found = Layout(i + 1, close, tuple(ends))
                i = close + 1
            else:
                i = _DECODER.raw_decode(text, i)[1]
    except (IndexError, ValueError):
        return None


def items(
    text: str, i: int, offset: int = 0, raw: bytes = b"", parsed: list[Any] | None = None
) -> list[int]:
    """Where each item of a JSON array's contents starting at `i` ends (plus `offset`),
    up to its closing bracket or the end of `text` (`raw`: its bytes, `parsed`: its items
    as parsed, to try first)."""
    ends: list[int] = []
    hits = misses = 0  # a client that writes otherwise (spaces, \u escapes): scanned only
    while True:
        i = _skip(text, i)
        if i >= len(text) or text[i] == "]":
            return ends
        n = len(ends)
        written = b""
        if parsed is not None and n < len(parsed) and (hits or misses < 2):
            with contextlib.suppress(orjson.JSONEncodeError, TypeError):
                written = orjson.dumps(parsed[n])
        if written and raw.startswith(written, i):
            i += len(written)
            hits += 1
        else:
            misses += 1 if written else 0
            i = _DECODER.raw_decode(text, i)[1]
        ends.append(i + offset)


def _skip(text: str, i: int) -> int:
    """Past whitespace and a separating comma."""
    i = _WS.match(text, i).end()  # type: ignore[union-attr]
    if i < len(text) and text[i] == ",":
        i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
    return i


def frame(body: dict[str, Any]) -> tuple[bytes, bytes]:
    """A rewritten body's bytes before its first message and after its last: put together
    with each message's `orjson.dumps`, it is `orjson.dumps(body)`, byte for byte."""
    parts: dict[bool, list[bytes]] = {False: [], True: []}  # before and after the messages
    after = False
    for key, value in body.items():
        if key == KEY:
            after = True
        else:
            parts[after].append(orjson.dumps(key) + b":" + orjson.dumps(value))
    head = b"{" + b"".join(p + b"," for p in parts[False]) + b'"' + KEY.encode() + b'":['
    return head, b"]" + b"".join(b"," + p for p in parts[True]) + b"}"


def assemble(frame: tuple[bytes, bytes], outs: tuple[bytes, ...]) -> bytes:
    """A rewritten body: the frame around its messages' bytes, one copy of them."""
    head, tail = frame
    if not outs:
        return head + tail
    parts = list(outs)
    parts[0] = head + parts[0]
    parts[-1] += tail
    return b",".join(parts)
