"""Request bodies in and out: parsed as strict JSON with one meaning only, written compactly.

A JSON text a provider could read differently from gate is refused: an object that
repeats a key (parsers disagree on which copy counts, and the provider may read the one
gate did not screen), NaN or Infinity, a number no 64-bit parser keeps as written, a byte
order mark or a text that is not UTF-8, and anything after the value.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]", re.ASCII)
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}\Z")


class Ambiguous(ValueError):
    """The body is not strict JSON with one meaning; the message names where."""


def parse(raw: bytes) -> Any:
    """The body's one meaning. Raises ValueError (Ambiguous, naming where, or the parser's
    syntax error) otherwise."""
    try:
        body = orjson.loads(raw)  # strict: no NaN, nothing after the value, UTF-8 only
    except orjson.JSONDecodeError:
        # orjson refuses what the JSON grammar allows but it does not (lone \u-escaped
        # surrogates, integers beyond 64 bits); those are read by the standard parser,
        # with the same strictness.
        return _standard(raw)
    unique(raw, body)
    return body


def unique(raw: bytes, body: Any) -> None:
    """Raise Ambiguous if the text orjson parsed into `body` repeats a key (orjson keeps the
    last copy). A text written as orjson writes it cannot: it is the body written back."""
    if orjson.dumps(body) != raw:  # spaces, \u escapes, another writer: read it checked
        _standard(raw)


def _standard(raw: bytes) -> Any:
    text = raw.decode("utf-8")  # strict; a BOM stays and is refused by the parser
    try:
        body = json.loads(
            text,
            object_pairs_hook=_unique,
            parse_constant=_constant,
            parse_int=_int,
            parse_float=_float,
        )
        if _SURROGATE.search(text):
            orjson.dumps(body)  # fails on a string that is not Unicode text
        return body
    except orjson.JSONEncodeError:
        # Providers' parsers refuse it, replace it or keep it, and gate's matchers cannot
        # read it: an emoji cut in two by a truncated tool output, or a value split by one.
        raise Ambiguous(
            "a string holds a lone UTF-16 surrogate (a \\udXXX escape without"
            " its pair), which providers read differently; remove the broken"
            " character"
        ) from None
    except _Repeated:
        raise Ambiguous(_where_repeated(text)) from None
    except RecursionError:  # orjson stops at 1024 levels too; no agent nests that deep
        raise Ambiguous("the body nests deeper than gate reads") from None


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Repeated(pairs)
    return obj


class _Repeated(Exception):
    def __init__(self, pairs: list[tuple[str, Any]]):
        super().__init__()
        self.pairs = pairs


def _constant(name: str) -> Any:
    raise Ambiguous(f"{name} is not JSON (providers refuse it or read it otherwise)")


def _int(text: str) -> int:
    value = int(text)
    if not -(2**63) <= value < 2**64:
        raise Ambiguous(
            f"an integer of {len(text)} digits is beyond what every provider's parser keeps exactly"
        )
    return value


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise Ambiguous(f"a number of {len(text)} characters overflows to infinity")
    return value


def _where_repeated(text: str) -> str:
    tree = json.loads(text, object_pairs_hook=_Pairs)
    found = _find(tree, "")
    where = found if found else "an object"
    return (
        f"the key {where} appears more than once in one object; the provider may"
        " read the copy gate did not screen"
    )


class _Pairs(list[tuple[str, Any]]):
    pass


def _find(node: Any, at: str) -> str | None:
    if isinstance(node, _Pairs):
        seen: set[str] = set()
        for i, (key, value) in enumerate(node):
            here = f"{at}.{key}" if _IDENT.match(key) else f"{at}[key #{i}]"
            if key in seen:
                return here.lstrip(".")
            seen.add(key)
            if (deeper := _find(value, here)) is not None:
                return deeper
    elif isinstance(node, list):
        for i, value in enumerate(node):
            if (deeper := _find(value, f"{at}[{i}]")) is not None:
                return deeper
    return None


def dump(body: Any) -> bytes:
    """Serialize a rewritten body compactly (UTF-8, no spaces), as SDKs and agents send it."""
    try:
        return orjson.dumps(body)
    except (orjson.JSONEncodeError, TypeError):  # a lone surrogate stays \u-escaped
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode()
