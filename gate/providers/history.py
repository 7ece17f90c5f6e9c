"""What walking each item of a conversation gave, remembered across requests.

Agents resend the whole conversation every turn, so most of a large request is items gate
walked on the previous turn. An item is looked up by where it is (which walk, top-level
key, index) and its exact serialisation: a remembered result is reused only for an
identical item at the same place (same types, values and key order), so it is the result a
fresh walk would give. Many conversations side by side each find their own items (a memo
holding one item per place had them displace each other's at every index). Results must
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

A request may also hand in its conversation's walks (`Walks`, kept by whoever screens,
per conversation): a walker that goes through a conversation list with `Items` then takes
up the leading items that are the very objects its last turn walked (frozen: so equal to
what they were) from where that walk was after them, and walks only the rest.
"""

from __future__ import annotations

import marshal
import operator
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
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
# The current request's frozen items (each held, as above).
_FROZEN: ContextVar[Frozen | None] = ContextVar("gate_frozen", default=None)
# The current request's conversation's walks of its lists, by walk (None: walked whole).
_WALKS: ContextVar[Walks | None] = ContextVar("gate_walks", default=None)


@contextmanager
def one_request(
    memo: Memo | None,
    frozen: Iterable[Any] = (),
    walks: Walks | None = None,
    listed: Sequence[Any] = (),
) -> Iterator[None]:
    """Until the block ends, remember walks in `memo` (None: walk every item) and serialise
    each item at most once (then forget the serialisations). `frozen`: items nothing edits,
    ever (so an item remembered as one is still one). `walks`: the conversation's walks of
    its lists in its last turn (their items frozen too), taken up and replaced by this
    request's. `listed`: more frozen items (a conversation list's), indexed only when an
    item that is none of `frozen` is looked up (a next turn's walk takes most of them up
    whole, and looks up none)."""
    snaps, remembers = _SNAPS.set({}), _MEMO.set(memo)
    held = _FROZEN.set(Frozen(frozen, listed))
    taken = _WALKS.set(walks)
    try:
        yield
    finally:
        _WALKS.reset(taken)
        _FROZEN.reset(held)
        _MEMO.reset(remembers)
        _SNAPS.reset(snaps)


def same_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading elements of a and b are the same objects."""
    same = list(map(operator.is_, a, b))  # in C: a next turn's 700 strings in microseconds
    try:
        return same.index(False)
    except ValueError:
        return len(same)


class Frozen:
    """The items a request declares frozen, by id(): `first` at once, `more` on the first
    lookup that misses `first` (each entry holds the item, so its id is not reused)."""

    __slots__ = ("_by", "_more")

    def __init__(self, first: Iterable[Any], more: Sequence[Any] = ()) -> None:
        first = list(first)
        self._by: dict[int, Any] = dict(zip(map(id, first), first, strict=True))
        self._more: Sequence[Any] | None = more or None

    def held(self, item: Any) -> bool:
        """Whether `item` is one of them (the very object)."""
        hit = self._by.get(id(item))
        if hit is None and self._more is not None:
            more, self._more = self._more, None
            self._by.update(zip(map(id, more), more, strict=True))
            hit = self._by.get(id(item))
        return hit is item


Use = tuple[str, str, Any]  # a tool call as a walker finds it: id, name, input


class Walked:
    """A list's items walked in one request: their segments, calls and results in order,
    and where each item's end (immutable once kept)."""

    __slots__ = ("calls", "ends", "head", "items", "results", "segs", "uses")

    def __init__(
        self,
        head: tuple[Sequence[Any], ...],
        items: tuple[Any, ...],
        segs: tuple[Any, ...],
        uses: tuple[Use, ...],
        results: tuple[tuple[str, Any], ...],
        ends: tuple[tuple[int, int, int], ...],
        calls: tuple[Any, ...],
    ) -> None:
        self.head = head  # the walk's segments before the list's, in parts
        self.items = items
        self.segs = segs
        self.uses = uses
        self.results = results
        self.ends = ends  # ends[i]: how many segments, uses and results items[:i] gave
        self.calls = calls  # the tool calls paired from `uses`, one each, in order


class Walks:
    """A conversation's walks of its lists, by walk (a format and where its list is): its
    last turn's (`last`), taken up by this turn's (`by`); one per conversation, never
    shared (each turn starts from a new one, `next`)."""

    def __init__(self, last: dict[Hashable, Walked] | None = None) -> None:
        self.last: dict[Hashable, Walked] = last or {}
        self.by: dict[Hashable, Walked] = {}
        self.taken = 0  # items taken up from the last turn's walk (a figure for tests)
        # How many leading segments of this turn's walk are the very ones of the last
        # turn's (None: not known yet; the first list walked tells).
        self.shared: int | None = None

    def next(self) -> Walks:
        """The walks a next turn takes up: this turn's."""
        return Walks(self.by)


class Items:
    """One walk through a conversation list: it starts after the leading items that are
    the very objects the conversation's last turn walked (`start`), with what walking them
    gave (`segs`, `uses`, `results`, `calls`); each further item is `add`ed, and `keep`
    leaves the walk to the next turn once it is complete."""

    def __init__(self, key: Hashable, items: Any, head: tuple[Sequence[Any], ...] = ()) -> None:
        self._key, self._head = key, head
        self._walks = walks = _WALKS.get()
        prev = walks.last.get(key) if walks is not None else None
        n = 0
        if prev is not None and isinstance(items, list):
            n = min(same_prefix(prev.items, items), len(prev.ends) - 1)
        self.start = n
        self.shared = 0  # leading segments of the walk known to be the last turn's
        if walks is not None and walks.shared is None:
            # The walk's segments start with `head` (its parts remembered: the same objects
            # while unchanged), then these items' segments.
            same = prev is not None and len(prev.head) == len(head)
            if prev is not None and same and all(map(operator.is_, prev.head, head)):
                self.shared = sum(map(len, head)) + prev.ends[n][0]
            walks.shared = self.shared
        self.known = 0  # results taken up: no two of them answer one call (checked then)
        if prev is None or not n:
            self.segs: list[Any] = []
            self.uses: list[Use] = []
            self.results: list[tuple[str, Any]] = []
            self.calls: tuple[Any, ...] = ()
            self._ends = [(0, 0, 0)]
            return
        a, b, c = prev.ends[n]
        self.segs, self.uses, self.results = (
            list(prev.segs[:a]),
            list(prev.uses[:b]),
            list(prev.results[:c]),
        )
        self.calls = prev.calls[:b]  # made from the very same uses: the objects to reuse
        self.known = c
        self._ends = list(prev.ends[: n + 1])
        assert self._walks is not None
        self._walks.taken += n

    def remembered[R](self, key: Hashable, item: Any, compute: Callable[[], R]) -> R:
        """remembered(key, item, compute) for an item after those taken up: on a next turn
        they are the items it added, new (not looked up: it would only cost a serialisation)."""
        return compute() if self.start else remembered(key, item, compute)

    def add(
        self, segs: Iterable[Any], uses: Iterable[Use], results: Iterable[tuple[str, Any]]
    ) -> None:
        """The next item's segments, calls and results."""
        self.segs += segs
        self.uses += uses
        self.results += results
        self._ends.append((len(self.segs), len(self.uses), len(self.results)))

    def keep(self, items: Any, calls: Sequence[Any]) -> None:
        """The walk went through every item of `items` without error, and paired `calls`
        (one per use): kept for the conversation's next turn."""
        if self._walks is not None and isinstance(items, list) and len(calls) == len(self.uses):
            self._walks.by[self._key] = Walked(
                self._head,
                tuple(items),
                tuple(self.segs),
                tuple(self.uses),
                tuple(self.results),
                tuple(self._ends),
                tuple(calls),
            )


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


_MISSING = object()


class Memo:
    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        # (key, serialisation) → what the walk gave
        self._by_snap: dict[tuple[Hashable, bytes], Any] = {}
        # (key, id of a frozen item) → (that item, what the walk gave): found without
        # serialising it; the entry holds the item, so its id is not reused meanwhile.
        self._by_item: dict[tuple[Hashable, int], tuple[Any, Any]] = {}
        self._bytes = 0  # serialisations kept, counted once per entry of either map
        self._max = max_bytes
        self._lock = threading.Lock()
        self.walked = 0  # items walked (not remembered), for tests and benchmarks

    def remembered(self, key: Hashable, item: Any, compute: Callable[[], T]) -> T:
        """`compute()`, or what it gave for a byte-identical item at the same `key`."""
        frozen = _FROZEN.get()
        held = item if frozen is not None and frozen.held(item) else None
        if held is not None:
            hit = self._by_item.get((key, id(held)))
            if hit is not None and hit[0] is held:
                found: T = hit[1]
                return found
        try:
            snap = _snapshot(item)
        except ValueError:  # not plain data (marshal refuses it): never remembered
            return compute()
        value = self._by_snap.get((key, snap), _MISSING)
        if value is _MISSING:
            value = compute()
            self.walked += 1
            self._keep(len(snap), self._by_snap, (key, snap), value)
        if held is not None:
            self._keep(len(snap), self._by_item, (key, id(held)), (held, value))
        return value  # type: ignore[no-any-return]

    def _keep(self, size: int, table: dict[Any, Any], k: Hashable, v: Any) -> None:
        with self._lock:
            if self._bytes + size > self._max:  # all forgotten: the next turns walk again
                self._by_snap.clear()
                self._by_item.clear()
                self._bytes = 0
            table[k] = v
            self._bytes += size

    def __len__(self) -> int:
        return len(self._by_snap)

    def clear(self) -> None:
        with self._lock:
            self._by_snap.clear()
            self._by_item.clear()
            self._bytes = 0
