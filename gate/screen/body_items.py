"""A request body read item by item: each distinct conversation item's bytes are parsed and
checked for repeated keys once, and a rewritten body is written from its items' bytes.

Agents resend the whole conversation every turn. A body is its frame (every byte outside
the conversation's item list: model, system, tools...) and the list's items, each a
complete JSON value whose own bytes give its meaning wherever it sits. So an item whose
bytes were parsed before (strictly, with one meaning only, at the same depth) is that
parse again, and only new items and the frame are read. Parsed items are shared between
requests and never edited: screening edits its own copy of an item (`Body.own`) first.

Where the list starts is found by scanning the frame's keys, or by a head (the bytes up to
the list's "[") seen before: a JSON text's bytes up to a point fix what that point is.
Where each item ends is found by recognising an item seen at about the same index (its
bytes start there; an object ends where its own bytes do), or by scanning it. The frame,
with an empty list in place, is parsed whole: a repeated key in it (the list's key twice,
say) or anything else it gets wrong makes `read` give None, and the caller parses the body
whole, which says why as it always has.
"""

from __future__ import annotations

import json
import re
import secrets
import threading
from collections.abc import Callable
from typing import Any

import orjson

from gate.screen.codec import dump, unique

# Item and frame bytes kept, in total (their parsed objects take a few times as much); all
# are forgotten past it.
MAX_BYTES = 64 << 20
MAX_HEADS = 16  # heads remembered per list (conversations side by side)
# Items remembered per index of a list, to recognise in the next body: by their first HEAD
# bytes, or whole when shorter, so many conversations side by side each find their own at
# once (an index that kept its last 8 items had twenty agents push each other's out).
HEAD = 64
PER_HEAD = 64  # items kept under one index and head (a shared prefix), newest first
PER_INDEX = 256  # heads (and short items of one length) kept per index, oldest forgotten

# Where each format keeps its conversation: the first of these paths found in document
# order is read item by item (the rest of the body, another copy included, is frame).
LISTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "anthropic": (("messages",),),
    "openai-chat": (("messages",),),
    "openai-responses": (("input",),),
    "gemini": (("contents",), ("request", "contents")),
}

_DECODER = json.JSONDecoder()
_SCANSTRING: Callable[[str, int], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]
_WS = re.compile(r"[ \t\n\r]*")
_WS_BYTES = re.compile(rb"[ \t\n\r]*")
# A string no body holds (random per process), put where the items go to split a frame.
_MARK = "gate-items-" + secrets.token_hex(16)
_MARKED = orjson.dumps([_MARK])


class _Item:
    """One distinct item's bytes, parsed (never edited), and as orjson writes it."""

    __slots__ = ("out", "raw", "value")

    def __init__(self, raw: bytes, value: Any, out: bytes | None) -> None:
        self.raw = raw
        self.value = value
        self.out = out  # None until first written (raw itself when written as orjson does)


class _Frame:
    """A distinct frame's bytes parsed (never edited), and its bytes as orjson writes them
    around the items (None until first written, () when they cannot be told apart)."""

    __slots__ = ("split", "value")

    def __init__(self, value: dict[str, Any]) -> None:
        self.value = value
        self.split: tuple[bytes, bytes] | tuple[()] | None = None


class _List:
    """What was read of one list path: its items by bytes, recent items per index, heads."""

    def __init__(self, depth: int) -> None:
        self.depth = depth  # containers around each item: the body object, the list...
        self.items: dict[bytes, _Item] = {}
        # index → an item's first HEAD bytes → items, newest first
        self.at: dict[int, dict[bytes, list[bytes]]] = {}
        # index → length → the items shorter than HEAD of that length seen there
        self.short: dict[int, dict[int, dict[bytes, None]]] = {}
        self.heads: list[bytes] = []


class Body:
    """A body read item by item: `value` is what screening reads; edit only after own()."""

    def __init__(
        self,
        value: dict[str, Any],
        path: tuple[str, ...],
        frame_raw: bytes,
        frame: _Frame,
        items: list[_Item],
        store: BodyItems,
    ) -> None:
        self.value = value
        self._path = path
        self._frame_raw = frame_raw
        self._frame = frame
        self._items = items
        self._list: list[Any] = _at(value, path)
        self._owned: set[int] = set()
        self._frame_owned = False
        self._store = store
        # Where the items sit in the raw bytes: just past the "[", its "]", just past each.
        self.spans: tuple[int, int, tuple[int, ...]] = (0, 0, ())

    @property
    def path(self) -> tuple[str, ...]:
        """Where the items are."""
        return self._path

    def as_read(self) -> tuple[Any, ...]:
        """The items as read (shared, never edited), whatever screening edited since."""
        return tuple(i.value for i in self._items)

    @property
    def owned(self) -> frozenset[int]:
        """The items this body edits (its own copies)."""
        return frozenset(self._owned)

    def frozen(self) -> list[Any]:
        """The shared objects of this body: items, and the frame's values and list items."""
        out: list[Any] = [i.value for i in self._items]
        if not self._frame_owned:
            for v in self._frame.value.values():
                out.append(v)
                if isinstance(v, list):
                    out += v
        return out

    def own(self, path: tuple[str | int, ...]) -> None:
        """Make what holds `path` this body's own copy, so that editing it edits no other."""
        n = len(self._path)
        if len(path) > n and path[:n] == self._path:
            j = path[n]
            if isinstance(j, int) and j not in self._owned:
                self._list[j] = orjson.loads(self._items[j].raw)
                self._owned.add(j)
            return
        if not self._frame_owned:
            fresh = orjson.loads(self._frame_raw)
            _at(fresh, self._path[:-1])[self._path[-1]] = self._list
            self.value.clear()
            self.value.update(fresh)
            self._frame_owned = True

    def dump(self) -> bytes:
        """codec.dump(self.value), written from each item's bytes."""
        try:
            if self._frame_owned:
                split = _split(self.value, self._path)
            else:
                if self._frame.split is None:
                    self._frame.split = _split(self._frame.value, self._path) or ()
                split = self._frame.split or None
            if not split:
                return dump(self.value)
            outs = [
                orjson.dumps(v) if j in self._owned else self._store.out(self._items[j])
                for j, v in enumerate(self._list)
            ]
        except (orjson.JSONEncodeError, TypeError):
            return dump(self.value)
        head, tail = split
        if not outs:
            return head + tail
        outs[0] = head + outs[0]  # the body copied once, not three times
        outs[-1] += tail
        return b",".join(outs)


class BodyItems:
    """Items and frames already read, by their bytes; one per gate (None: read bodies whole)."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self.parsed = 0  # items parsed (a figure for tests and benches)
        self.scanned = 0  # items whose end was found by scanning them (not recognised)
        self._lists: dict[tuple[str, ...], _List] = {}
        self._frames: dict[bytes, _Frame] = {}
        self._bytes = 0
        self._lock = threading.Lock()

    def read(self, raw: bytes, fmt: str) -> Body | None:
        """The body, its unchanged items shared with earlier bodies; None when it cannot be
        read item by item exactly as a whole-body parse reads it (parse it whole then)."""
        paths = LISTS.get(fmt)
        if not paths:
            return None
        try:
            return self._read(raw, paths)
        except (ValueError, LookupError, TypeError):  # orjson's and the scanner's included
            return None

    def _read(self, raw: bytes, paths: tuple[tuple[str, ...], ...]) -> Body | None:
        text: str | None = None  # the bytes from `base` on, one character per byte
        base = 0
        found = None
        for path in paths:  # a head seen before: the list starts where it ends
            lst = self._lists.get(path)
            for head in lst.heads if lst else ():
                if raw.startswith(head):
                    found = path, len(head)
                    break
            if found:
                break
        if found is None:
            text = raw.decode("latin-1")  # one character per byte: offsets are byte offsets
            i = _WS.match(text, 0).end()  # type: ignore[union-attr]
            if text[i : i + 1] != "{":
                return None
            found = _find(text, i + 1, paths, ())[0]
            if found is None:
                return None
        path, start = found
        lst = self._lists.get(path) or self._lists.setdefault(path, _List(len(path) + 1))
        spans: list[tuple[int, int, bytes | None]] = []
        i, shift = start, 0
        while True:
            i = _WS_BYTES.match(raw, i).end()  # type: ignore[union-attr]
            if raw[i] == 0x5D and not spans:  # "]": no items
                break
            seen, shift = _recognised(raw, i, len(spans), shift, lst)
            if seen is not None:
                end = i + len(seen)
            else:
                self.scanned += 1
                if text is None:  # from here on only: new items are mostly the last ones
                    text, base = raw[i:].decode("latin-1"), i
                end = _DECODER.raw_decode(text, i - base)[1] + base
            spans.append((i, end, seen))
            i = _WS_BYTES.match(raw, end).end()  # type: ignore[union-attr]
            if raw[i] == 0x2C:  # ","
                i += 1
            elif raw[i] == 0x5D:
                break
            else:
                return None
        close = i
        frame_raw = raw[:start] + raw[close:]
        frame = self._frames.get(frame_raw)
        if frame is None:
            value = orjson.loads(frame_raw)
            unique(frame_raw, value)  # the list's key twice, say: Ambiguous, read whole
            if not isinstance(value, dict) or _at(value, path) != []:
                return None
            frame = _Frame(value)
        items = [self._item(raw, a, b, seen, lst) for a, b, seen in spans]
        self._keep(raw[:start], frame_raw, frame, items, lst)
        value = _with(frame.value, path, [it.value for it in items])
        body = Body(value, path, frame_raw, frame, items, self)
        body.spans = (start, close, tuple(b for _, b, _ in spans))
        return body

    def _item(self, raw: bytes, a: int, b: int, seen: bytes | None, lst: _List) -> _Item:
        key = seen if seen is not None else raw[a:b]
        hit = lst.items.get(key)
        if hit is not None:
            return hit
        # Parsed at its depth in the body, so a parser's nesting limit stops it as there.
        d = lst.depth
        wrapped = b"[" * d + key + b"]" * d
        value = orjson.loads(wrapped)
        unique(wrapped, value)  # a key repeated inside it: Ambiguous, the body is read whole
        for _ in range(d):
            value = value[0]
        self.parsed += 1
        return _Item(key, value, None)

    def _keep(
        self,
        head: bytes,
        frame_raw: bytes,
        frame: _Frame,
        items: list[_Item],
        lst: _List,
    ) -> None:
        with self._lock:
            added = 0
            if frame_raw not in self._frames:
                self._frames[frame_raw] = frame
                added += len(frame_raw)
            if head not in lst.heads:
                lst.heads.insert(0, head)
                del lst.heads[MAX_HEADS:]
            for j, it in enumerate(items):
                raw = it.raw
                if raw not in lst.items:
                    lst.items[raw] = it
                    added += len(raw)
                if raw[:1] in (b"{", b"["):  # ends where its own bytes end
                    _remember_at(lst, j, raw)
            self._bytes += added
            if self._bytes > self.max_bytes:  # new dicts: a reader elsewhere keeps its own
                self._lists, self._frames, self._bytes = {}, {}, 0

    def out(self, item: _Item) -> bytes:
        """The item as orjson writes it (its own bytes when it was written so)."""
        if item.out is None:
            out = orjson.dumps(item.value)
            item.out = item.raw if out == item.raw else out
        return item.out

    def clear(self) -> None:
        with self._lock:
            self._lists, self._frames, self._bytes = {}, {}, 0


def _remember_at(lst: _List, j: int, raw: bytes) -> None:
    """The item `raw` was the j-th: where the next body is looked in first."""
    if len(raw) < HEAD:
        lengths = lst.short.setdefault(j, {})
        same = lengths.setdefault(len(raw), {})
        if raw not in same:
            same[raw] = None
            if len(same) > PER_INDEX:
                del same[next(iter(same))]
        return
    heads = lst.at.setdefault(j, {})
    recent = heads.get(raw[:HEAD])
    if recent is None:
        recent = heads[raw[:HEAD]] = []
        if len(heads) > PER_INDEX:
            del heads[next(iter(heads))]
    elif recent[0] is raw:
        return  # the item last seen here: kept already
    elif raw in recent:
        recent.remove(raw)
    recent.insert(0, raw)
    del recent[PER_HEAD:]


def _recognised(raw: bytes, i: int, j: int, shift: int, lst: _List) -> tuple[bytes | None, int]:
    """An item seen before whose bytes start at i (the j-th item, near index j + shift)."""
    head = raw[i : i + HEAD]
    for k in (j + shift, j) if shift else (j,):
        heads = lst.at.get(k)
        for seen in heads.get(head, ()) if heads else ():
            if raw.startswith(seen, i):
                return seen, k - j
        for n, same in lst.short.get(k, {}).items():
            if (short := head[:n]) in same:
                return short, k - j
    return None, shift


def _find(
    text: str, i: int, paths: tuple[tuple[str, ...], ...], at: tuple[str, ...]
) -> tuple[tuple[tuple[str, ...], int] | None, int]:
    """The first of `paths` (below `at`) whose value is a list, in document order, in the
    object whose keys start at i: the path and where its items start; else None and where
    the object ends."""
    while True:
        i = _skip(text, i)
        if text[i] == "}":
            return None, i + 1
        if text[i] != '"':
            raise ValueError("not a key")
        key, i = _SCANSTRING(text, i + 1)
        i = _WS.match(text, i).end()  # type: ignore[union-attr]
        if text[i] != ":":
            raise ValueError("not a colon")
        i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
        here = (*at, key)
        if here in paths and text[i] == "[":
            return (here, i + 1), i
        if text[i] == "{" and any(p[: len(here)] == here and len(p) > len(here) for p in paths):
            found, i = _find(text, i + 1, paths, here)
            if found is not None:
                return found, i
        else:
            i = _DECODER.raw_decode(text, i)[1]


def _skip(text: str, i: int) -> int:
    """Past whitespace and a separating comma (the frame's parse checks the commas)."""
    i = _WS.match(text, i).end()  # type: ignore[union-attr]
    if text[i] == ",":
        i = _WS.match(text, i + 1).end()  # type: ignore[union-attr]
    return i


def _at(node: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


def _with(frame: dict[str, Any], path: tuple[str, ...], items: list[Any]) -> dict[str, Any]:
    """The frame with `items` at `path`: new objects along the path, the rest shared."""
    node = dict(frame)
    node[path[0]] = items if len(path) == 1 else _with(frame[path[0]], path[1:], items)
    return node


def _split(value: dict[str, Any], path: tuple[str, ...]) -> tuple[bytes, bytes] | None:
    """orjson's bytes of `value` before its items and after them (None: cannot tell)."""
    marked = _with(value, path, [_MARK])
    out = orjson.dumps(marked)
    if out.count(_MARKED) != 1:
        return None
    head, tail = out.split(_MARKED)
    return head + b"[", b"]" + tail
