"""What walking each item of a conversation gave, remembered across requests.

Agents resend the whole conversation every turn, so most of a large request is items gate
walked on the previous turn. An item is looked up by where it is (which walk, top-level
key, index) and recognised by its exact serialisation: a remembered result is reused only
for an identical item (same types, values and key order), so it is the result a fresh walk
would give. Results must
hold immutable values only (paths, strings, roles); anything the screens may edit in place
(a tool call's input) is fetched from the current body by the caller.

The memo belongs to whoever screens (a gate's Screens), never to this module: two gates in
one process remember nothing of each other's requests. It is handed in for one request
(`one_request(memo)`), and the format walkers look their items up in it (`remembered()`);
outside a request, or with no memo, every item is walked afresh.

Within one request an item is serialised once, however many lookups it gets (the walk,
then the unknown-field sweep): the serialisation is kept with the item itself and dropped
by `edited()` when the request's screens change the item in place.
An item the request declares frozen (shared between requests and never edited: one read
before, gate/screen/body_items.py) is recognised by identity, without serialising it.
"""

from __future__ import annotations

import marshal
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

T = TypeVar("T")

MAX_BYTES = 64 << 20  # serialisations remembered, in total; all are forgotten past it

# The current request's serialisations, by id() of the item; each entry holds the item too,
# so its id cannot be reused by another object while the request runs.
_SNAPS: ContextVar[dict[int, tuple[Any, bytes]] | None] = ContextVar("gate_snaps", default=None)
# The memo the current request's walks are remembered in (its screener's).
_MEMO: ContextVar[Memo | None] = ContextVar("gate_memo", default=None)
# The current request's frozen items, by id(); each entry holds the item, as above.
_FROZEN: ContextVar[dict[int, Any] | None] = ContextVar("gate_frozen", default=None)


@contextmanager
def one_request(memo: Memo | None, frozen: Iterable[Any] = ()) -> Iterator[None]:
    """Until the block ends, remember walks in `memo` (None: walk every item) and serialise
    each item at most once (then forget the serialisations). `frozen`: items nothing edits,
    ever (so an item remembered as one is still one)."""
    snaps, remembers = _SNAPS.set({}), _MEMO.set(memo)
    held = _FROZEN.set({id(x): x for x in frozen})
    try:
        yield
    finally:
        _FROZEN.reset(held)
        _MEMO.reset(remembers)
        _SNAPS.reset(snaps)


def remembered[R](key: Hashable, item: Any, compute: Callable[[], R]) -> R:
    """`compute()`, or what it gave for a byte-identical item at the same `key` in the
    current request's memo."""
    memo = _MEMO.get()
    return compute() if memo is None else memo.remembered(key, item, compute)


def edited(items: Iterable[Any]) -> None:
    """Items just changed in place: their serialisations are no longer theirs."""
    snaps = _SNAPS.get()
    if snaps is not None:
        for item in items:
            snaps.pop(id(item), None)


def _snapshot(item: Any) -> bytes:
    """The item's marshal serialisation: exact (True, 1 and 1.0 differ; key order counts),
    loads back to an identical value, and costs about two thirds of orjson.dumps because it
    copies strings instead of escaping them. Two identical items may still serialise apart
    (marshal notes shared objects): that only costs a walk."""
    snaps = _SNAPS.get()
    if snaps is None:
        return marshal.dumps(item)
    hit = snaps.get(id(item))
    if hit is not None and hit[0] is item:
        return hit[1]
    snap = marshal.dumps(item)
    snaps[id(item)] = (item, snap)
    return snap


class Memo:
    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        # key → (serialisation, value, the frozen item it was worked out from, if one was)
        self._entries: dict[Hashable, tuple[bytes, Any, Any]] = {}
        self._bytes = 0
        self._max = max_bytes
        self._lock = threading.Lock()

    def remembered(self, key: Hashable, item: Any, compute: Callable[[], T]) -> T:
        """`compute()`, or what it gave for a byte-identical item at the same `key`."""
        hit = self._entries.get(key)
        frozen = _FROZEN.get()
        held = item if frozen and frozen.get(id(item)) is item else None
        if hit is not None and held is not None and hit[2] is held:
            found: T = hit[1]
            return found
        try:
            snap = _snapshot(item)
        except ValueError:  # not plain data (marshal refuses it): never remembered
            return compute()
        if hit is not None and hit[0] == snap:
            found = hit[1]
            if held is not None:
                with self._lock:
                    if self._entries.get(key) is hit:
                        self._entries[key] = (snap, found, held)
            return found
        value = compute()
        with self._lock:
            old = self._entries.pop(key, None)
            self._bytes -= len(old[0]) if old else 0
            if self._bytes + len(snap) > self._max:
                self._entries.clear()
                self._bytes = 0
            self._entries[key] = (snap, value, held)
            self._bytes += len(snap)
        return value

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
