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
A body that starts with the same bytes as one read before, up to the end of some item,
holds that body's leading items at the same offsets: they are taken as one (one compare
of bytes, the next turn of a conversation costs what it added). Where each other item
ends is found by recognising an item seen at about the same index (its bytes start there;
an object ends where its own bytes do), or by scanning it. The frame,
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
RECENT = 64  # bodies kept whole, to find a next one's leading items by one compare of bytes

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


class _Recent:
    """A body read before: its bytes and where its items end in them."""

    __slots__ = ("close", "ends", "frame", "frame_raw", "items", "path", "raw", "start")

    def __init__(
        self,
        raw: bytes,
        path: tuple[str, ...],
        start: int,
        ends: list[int],
        items: list[_Item],
        close: int,
        frame_raw: bytes,
        frame: _Frame,
    ) -> None:
        self.raw = raw
        self.path = path
        self.start = start  # just past the list's "["
        self.ends = ends  # just past each item
        self.items = items
        self.close = close  # the list's "]"
        self.frame_raw = frame_raw  # the bytes before the list's items and after them
        self.frame = frame

    def same_tail(self, raw: bytes, close: int) -> bool:
        """Whether `raw`, its list closing at `close`, ends with this body's bytes from its
        list's "]" on."""
        tail = len(self.raw) - self.close
        return len(raw) - close == tail and raw.endswith(memoryview(self.raw)[self.close :])

    def shared(self, raw: bytes) -> int:
        """How many leading items `raw` holds at the same offsets, byte for byte (bytes up
        to a point fix what everything before it is: the head, then each item)."""
        ends, n = self.ends, len(self.ends)
        view = memoryview(self.raw)
        if not n or not raw.startswith(view[: self.start]):
            return 0

        def same(
            k: int, checked: int
        ) -> bool:  # the first k items; bytes before `checked` known same
            return raw.startswith(view[checked : ends[k - 1]], checked)

        k = max(n - 2, 1)  # the usual: all but the last one or two (a moved cache mark)
        if same(k, self.start):
            while k < n and same(k + 1, ends[k - 1]):
                k += 1
            return k
        lo, hi = 0, k - 1  # the largest k that holds, given same(lo)
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if same(mid, self.start) else (lo, mid - 1)
        return lo


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
        self._read = tuple(self._list)  # the items as read (shared, never edited)
        self._owned: set[int] = set()
        self._frame_owned = False
        self._store = store

    @property
    def path(self) -> tuple[str, ...]:
        """Where the items are."""
        return self._path

    def as_read(self) -> tuple[Any, ...]:
        """The items as read (shared, never edited), whatever screening edited since."""
        return self._read

    @property
    def frame(self) -> object | None:
        """The frame as read (shared with every body of the same frame bytes), or None once
        this body edits it."""
        return None if self._frame_owned else self._frame

    @property
    def owned(self) -> frozenset[int]:
        """The items this body edits (its own copies)."""
        return frozenset(self._owned)

    def frozen(self) -> list[Any]:
        """The shared objects of this body besides its items (`as_read`): the frame's values
        and list items."""
        out: list[Any] = []
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
            out = self._store.out
            outs = [it.out or out(it) for it in self._items]
            for j in self._owned:
                outs[j] = orjson.dumps(self._list[j])
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
        self.taken = 0  # items found as a body read before's, by one compare of its bytes
        self._lists: dict[tuple[str, ...], _List] = {}
        self._frames: dict[bytes, _Frame] = {}
        self._recent: list[_Recent] = []  # newest first
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
        ends: list[int] = []  # where each item ends
        spans: list[tuple[int, int, bytes | None]] = []  # the items not taken as below
        i, shift = start, 0
        # The leading items of the body read before that shares the most with this one:
        # their bytes at the same offsets are those items (and the head before them).
        prev, k = None, 0
        for r in self._recent:
            if r.path == path and r.start == start and (n := r.shared(raw)) > k:
                prev, k = r, n
        more = True  # items (or an unexpected byte, which raw_decode refuses) follow
        if prev is not None:
            self.taken += k
            ends += prev.ends[:k]
            i = _WS_BYTES.match(raw, ends[-1]).end()  # type: ignore[union-attr]
            if raw[i] == 0x2C:  # ","
                i += 1
            elif raw[i] == 0x5D:
                more = False
            else:
                return None
        while more:
            i = _WS_BYTES.match(raw, i).end()  # type: ignore[union-attr]
            if raw[i] == 0x5D and not ends:  # "]": no items
                break
            seen, shift = _recognised(raw, i, len(ends), shift, lst)
            if seen is not None:
                end = i + len(seen)
            else:
                self.scanned += 1
                if text is None:  # from here on only: new items are mostly the last ones
                    text, base = raw[i:].decode("latin-1"), i
                end = _DECODER.raw_decode(text, i - base)[1] + base
            spans.append((i, end, seen))
            ends.append(end)
            i = _WS_BYTES.match(raw, end).end()  # type: ignore[union-attr]
            if raw[i] == 0x2C:  # ","
                i += 1
            elif raw[i] == 0x5D:
                break
            else:
                return None
        close = i
        if prev is not None and prev.same_tail(raw, close):  # and head: the same frame
            frame_raw, frame = prev.frame_raw, prev.frame
        else:
            frame_raw = raw[:start] + raw[close:]
            found_frame = self._frames.get(frame_raw)
            if found_frame is None:
                value = orjson.loads(frame_raw)
                unique(frame_raw, value)  # the list's key twice, say: Ambiguous, read whole
                if not isinstance(value, dict) or _at(value, path) != []:
                    return None
                found_frame = _Frame(value)
            frame = found_frame
        items = prev.items[:k] if prev is not None else []
        items += [self._item(raw, a, b, seen, lst) for a, b, seen in spans]
        self._keep(raw[:start], frame_raw, frame, items, lst, k)
        self._remember(_Recent(raw, path, start, ends, items, close, frame_raw, frame), prev, k)
        value = _with(frame.value, path, [it.value for it in items])
        return Body(value, path, frame_raw, frame, items, self)

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
        known: int = 0,
    ) -> None:
        """Keep the frame, head and items (the first `known` kept already, by a body read
        before whose bytes this one starts with)."""
        with self._lock:
            added = 0
            if frame_raw not in self._frames:
                self._frames[frame_raw] = frame
                added += len(frame_raw)
            if head not in lst.heads:
                lst.heads.insert(0, head)
                del lst.heads[MAX_HEADS:]
            for j, it in enumerate(items[known:], known):
                raw = it.raw
                if raw not in lst.items:
                    lst.items[raw] = it
                    added += len(raw)
                if raw[:1] in (b"{", b"["):  # ends where its own bytes end
                    _remember_at(lst, j, raw)
            self._bytes += added
            if self._bytes > self.max_bytes:  # new dicts: a reader elsewhere keeps its own
                self._lists, self._frames, self._recent, self._bytes = {}, {}, [], 0

    def _remember(self, read: _Recent, prev: _Recent | None, k: int) -> None:
        """Keep a body's bytes and items' ends: in place of the one it shares k items with
        when it goes on from it (shares at least half of them), else beside it."""
        with self._lock:
            gone = prev if prev is not None and 2 * k >= len(prev.ends) else None
            recent = [r for r in self._recent if r is not gone]
            if read.ends:
                recent.insert(0, read)
            total = 0
            for j, r in enumerate(recent):
                total += len(r.raw)
                if j >= RECENT or total > self.max_bytes:
                    del recent[j:]
                    break
            self._recent = recent

    def out(self, item: _Item) -> bytes:
        """The item as orjson writes it (its own bytes when it was written so)."""
        if item.out is None:
            out = orjson.dumps(item.value)
            item.out = item.raw if out == item.raw else out
        return item.out

    def clear(self) -> None:
        with self._lock:
            self._lists, self._frames, self._recent, self._bytes = {}, {}, [], 0


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
