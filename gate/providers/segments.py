"""What a walker yields: every outbound string with its role, and tool calls paired with results."""

from __future__ import annotations

import json
import operator
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from functools import partial
from itertools import compress
from operator import attrgetter, itemgetter
from typing import Any

from gate.providers.history import Items, remembered

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Walk:
    format: str
    model: str | None
    segments: tuple[Segment, ...]
    calls: tuple[ToolCall, ...]
    # Results answering a call this body does not hold (stateful APIs keep it upstream).
    orphans: tuple[tuple[str, JsonPath], ...] = ()
    # How many leading segments are known to be the very objects of the conversation's
    # last turn's walk (gate/providers/history.py: Items); more may be.
    shared: int = 0

    def texts(self, *roles: Role) -> Iterator[str]:
        return (s.text for s in self.segments if not roles or s.role in roles)


def pair(
    uses: list[tuple[str, str, Any]],
    results: dict[str, JsonPath],
    *,
    orphans_allowed: bool = False,
    made: Sequence[ToolCall] = (),
) -> tuple[ToolCall, ...]:
    """Tool calls with the result that answers each; unpairable bodies raise ValueError.

    Two calls sharing an id, or a result answering no call, would leave a result that no
    rule looked at (orphans are allowed only where earlier calls live on the server).
    `made[i]`: the call made before from the very object `uses[i]` is (a conversation's
    last turn): it is that call again when its result is where it was.
    """
    ids = list(map(itemgetter(0), uses))
    if len(set(ids)) != len(ids):
        raise ValueError("two tool calls share an id")
    if not orphans_allowed and (orphans := sorted(set(results) - set(ids))):
        raise ValueError(f"tool result {orphans[0]} answers no tool call in this request")
    found = list(map(results.get, ids))
    out = list(made)
    n = len(made)
    # A call made before is itself again where its result is where it was (in C: a next
    # turn's hundred calls in microseconds; only the others are made anew).
    moved = map(operator.ne, map(attrgetter("result"), made), found)
    for i in compress(range(n), moved):
        c = made[i]
        out[i] = _call(c.id, c.name, c.input, found[i])
    out += (_call(*use, r) for use, r in zip(uses[n:], found[n:], strict=True))
    return tuple(out)


def _call(id_: str, name: str, inp: Any, result: JsonPath | None) -> ToolCall:
    return ToolCall(id_, name, inp if isinstance(inp, dict) else {}, result)


def results_of(walked: Items) -> dict[str, JsonPath]:
    """The results a walk through a list found, by the call each answers; two answering
    one call raise ValueError."""
    out: dict[str, JsonPath] = dict(walked.results[: walked.known])
    for call_id, at in walked.results[walked.known :]:
        add_result(out, call_id, at)
    return out


def orphans(
    uses: list[tuple[str, str, Any]], results: dict[str, JsonPath]
) -> tuple[tuple[str, JsonPath], ...]:
    ids = {id_ for id_, _, _ in uses}
    return tuple((i, p) for i, p in results.items() if i not in ids)


def add_result(results: dict[str, JsonPath], call_id: str, at: JsonPath) -> None:
    if call_id in results:
        raise ValueError(f"two tool results answer {call_id}")
    results[call_id] = at


# The input of a call whose arguments did not parse, or whose call gate never saw: its
# target is unknown, so it is decided as the strictest call it could be.
UNPARSED = "\x00gate:unparsed"
UNSEEN = "\x00gate:unseen"


def arguments(raw: Any) -> dict[str, Any]:
    """A tool call's arguments, sent as a JSON string (OpenAI) or an object."""
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {UNPARSED: True}
        return parsed if isinstance(parsed, dict) else {UNPARSED: True}
    return {UNPARSED: True}


def replace_text(node: Any, text: str, text_keys: tuple[str, ...] = ("text",)) -> Any:
    """A tool result's content with every part replaced by `text`, keeping its shape:
    a string stays a string, a list keeps its length and each part its position."""
    if not isinstance(node, list):
        return text
    out = []
    for part in node:
        if isinstance(part, dict) and (key := next((k for k in text_keys if k in part), None)):
            out.append({**part, key: text})
        else:
            kind = str(part.get("type")) if isinstance(part, dict) else ""
            out.append({"type": _TEXT_TYPE.get(kind, "text"), "text": text})
    return out or text


# Non-text parts of a result become text parts of the same family.
_TEXT_TYPE = {"input_image": "input_text", "input_file": "input_text", "image_url": "text"}


def strings(node: Any, path: JsonPath) -> list[tuple[JsonPath, str]]:
    """Every string in a JSON value, with its path (keys included only as containers), in
    document order. A list filled by plain recursion: nested generators cost a frame per
    level for every string, and this runs over every request's whole history."""
    out: list[tuple[JsonPath, str]] = []
    if isinstance(node, str):
        out.append((path, node))
    elif isinstance(node, dict | list):
        _strings(node, path, out)
    return out


def _strings(
    node: dict[str, Any] | list[Any], path: JsonPath, out: list[tuple[JsonPath, str]]
) -> None:
    items: Any = node.items() if isinstance(node, dict) else enumerate(node)
    for key, value in items:
        if isinstance(value, str):
            out.append(((*path, key), value))
        elif isinstance(value, dict | list):
            _strings(value, (*path, key), out)


# Where a top-level item of a body sits: () for the body's own keys, (key,) for a value,
# (key, index) for an item of a top-level list (a message, a tool, a system block).
Unit = tuple[str | int, ...]
Strings = tuple[tuple[tuple[JsonPath, str], ...], tuple[str, ...]]


def unit_strings(body: Any, min_len: int) -> list[tuple[Unit, Strings]]:
    """Every string value and object key of at least `min_len` characters, one pass, per
    top-level item (what cannot hold a fingerprint or a secret is not even given a path).

    The items of a top-level list (the conversation) are walked once per distinct
    serialisation (providers.history): the history an agent resends costs a lookup.
    """
    if not isinstance(body, dict):
        return [((), _long_strings(body, (), min_len))]
    out: list[tuple[Unit, Strings]] = [
        ((), ((), tuple(k for k in body if isinstance(k, str) and len(k) >= min_len)))
    ]
    for key, value in body.items():
        if isinstance(value, list):
            out += [
                (
                    (key, i),
                    remembered(
                        ("long_strings", min_len, key, i),
                        item,
                        partial(_long_strings, item, (key, i), min_len),
                    ),
                )
                for i, item in enumerate(value)
            ]
        else:
            out.append(((key,), _long_strings(value, (key,), min_len)))
    return out


def unit_strings_after(
    body: dict[str, Any], min_len: int, key: str, k: int
) -> list[tuple[Unit, Strings] | None]:
    """unit_strings(body, min_len), the first k items of the list at `key` left out and one
    None in their place."""
    out: list[tuple[Unit, Strings] | None] = [
        ((), ((), tuple(n for n in body if isinstance(n, str) and len(n) >= min_len)))
    ]
    for name, value in body.items():
        if isinstance(value, list):
            if name == key:
                out.append(None)
            out += [
                ((name, i), list_item_strings(name, i, item, min_len))
                for i, item in (enumerate(value[k:], k) if name == key else enumerate(value))
            ]
        else:
            out.append(((name,), _long_strings(value, (name,), min_len)))
    return out


def list_item_strings(key: str, i: int, item: Any, min_len: int) -> Strings:
    """The strings of a top-level list's item, as unit_strings gives them."""
    return remembered(
        ("long_strings", min_len, key, i), item, partial(_long_strings, item, (key, i), min_len)
    )


def long_strings(body: Any, min_len: int) -> tuple[list[tuple[JsonPath, str]], list[str]]:
    """unit_strings, all units together."""
    found_all: list[tuple[JsonPath, str]] = []
    names_all: list[str] = []
    for _, (found, names) in unit_strings(body, min_len):
        found_all += found
        names_all += names
    return found_all, names_all


def item_strings(node: Any, at: JsonPath, min_len: int) -> Strings:
    """unit_strings of one item found at `at`, not remembered."""
    return _long_strings(node, at, min_len)


def _long_strings(node: Any, at: JsonPath, min_len: int) -> Strings:
    found: list[tuple[JsonPath, str]] = []
    names: list[str] = []
    stack: list[tuple[JsonPath, Any]] = [(at, node)]
    while stack:
        path, node = stack.pop()
        if isinstance(node, dict):
            names += [k for k in node if isinstance(k, str) and len(k) >= min_len]
            items: Any = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
            if len(node) >= min_len and (spelled := _spelled(node)) is not None:
                names.append(spelled)
        else:
            if isinstance(node, str) and len(node) >= min_len:
                found.append((path, node))
            continue
        for key, value in items:
            if isinstance(value, str):
                if len(value) >= min_len:
                    found.append(((*path, key), value))
            elif isinstance(value, dict | list):
                stack.append(((*path, key), value))
    return tuple(found), tuple(names)


def _spelled(numbers: list[Any]) -> str | None:
    """A list of whole numbers read as the characters (or bytes) they are the codes of
    (`[115, 107, 95, ...]`, `list(open(f, "rb").read())` sent as JSON numbers), or of
    single characters read as the text they spell (`list(open(f).read())`: each is too
    short to be screened alone): a value spelled that way is a value sent. Like an object
    key, it cannot be replaced in place (gate/screen/content.py keys() blocks the request
    when it holds anything)."""
    if isinstance(first := numbers[0], str):
        if len(first) != 1 or not all(isinstance(c, str) and len(c) <= 1 for c in numbers):
            return None
        return "".join(numbers)
    if not isinstance(first, int | float) or isinstance(first, bool):
        return None  # the common case (objects, lists) decided on the first item
    try:
        return "".join(map(chr, map(_code, numbers)))
    except (TypeError, ValueError, OverflowError):
        return None  # not all whole numbers, or past the last code point


def _code(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int | float) or n != int(n):
        raise TypeError
    return int(n)


def get_at(body: Any, path: JsonPath) -> Any:
    node = body
    for key in path:
        node = node[key]
    return node


def set_at(body: Any, path: JsonPath, value: Any) -> None:
    get_at(body, path[:-1])[path[-1]] = value
