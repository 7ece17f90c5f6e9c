"""What the content screens made of a conversation's frozen prefix, kept for its next turn.

Agents resend the whole conversation every turn, so a next turn's walked strings start with
the very segments of the turn before (the walk memo's objects: immutable, so the same
object is an equal value), and its conversation list starts with the very items read
before (gate/screen/body_items.py: shared, never edited). Per conversation, the outcomes of
the last turn's segments and of its items' strings no walker knows are kept in order, and
the next turn takes the ones before the first segment (item) that is not the same object,
as one slice, instead of looking each up again. A conversation is found among those of its
session (`Outbound.session`; another session's are never used) by its segments: the last
turn whose segments this one's start with. Many conversations can share one session (an
agent that names none sends all of a run's, or of a base URL's, under one), and each finds
its own.

- a segment's outcome is a function of the segment, the screens it met (the item cache's
  `Kept`, held: the same object is the same rules, denied values, secret screen and
  answers) and whether its result is withheld whole (`done`): reused only while `done` is
  the same set;
- an item's unknown strings' outcomes are a function of the item, the screens, and which
  of its strings the walk covered: reused only for the same item object at the same index,
  neither edited by this screening nor the last (a withheld result is swept as edited), and
  while no covered path under it came or went.

Anything else is screened as before, string by string (gate/screen/item_cache.py), so the
outcomes are the ones a whole-body screening gives, in the same order.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Collection, Sequence
from itertools import chain
from typing import Any

from gate.providers.history import Walks, same_prefix
from gate.providers.segments import JsonPath, Segment
from gate.screen.content import Outcome
from gate.screen.decided import Decided
from gate.screen.item_cache import Kept

MAX_CONVERSATIONS = 64  # conversations remembered (agents and their subagents side by side)
MAX_BYTES = 64 << 20  # of the bodies they were read from


__all__ = ["Conversation", "Conversations", "same_prefix"]


class Conversation:
    """One conversation's last turn, as the content screens saw it."""

    __slots__ = (
        "covered",
        "decided",
        "done",
        "ends",
        "frame",
        "framed",
        "items",
        "kept",
        "key",
        "listed",
        "outcomes",
        "owned",
        "paths",
        "paths_of",
        "segs",
        "shared",
        "source",
        "taken",
        "units",
        "walks",
    )

    def __init__(self) -> None:
        self.kept: Kept | None = None
        self.done: frozenset[str | None] = frozenset()
        self.segs: tuple[Segment, ...] = ()
        self.ends: list[int] = [0]  # ends[i]: how many outcomes segs[:i] gave
        self.outcomes: list[Outcome] = []
        self.key: str | None = None  # the conversation list's key in the body
        self.items: tuple[Any, ...] = ()  # its items as read (frozen), before any edit
        self.owned: frozenset[int] = frozenset()  # the items that screening edited
        self.units: list[tuple[Outcome, ...]] = []  # each item's unknown strings' outcomes
        self.covered: frozenset[JsonPath] = frozenset()
        self.taken = 0  # outcomes (segments' and items') the last screening took whole
        self.source: int | None = None  # the kept last turn this one was copied from
        self.shared = 0  # how many leading segments (or listed items) this turn shares with it
        self.listed: tuple[Any, ...] = ()  # the conversation list's items as read (frozen)
        self.walks = Walks()  # how its lists were walked (gate/providers/history.py)
        self.decided = Decided()  # what was made of its tool calls (gate/screen/decided.py)
        self.frame: object | None = None  # the body's frame as read, when nothing edited it
        # the outcomes of the strings no walker knows outside the list: before it, after it
        self.framed: tuple[list[Outcome], list[Outcome]] = ([], [])
        self.paths: frozenset[JsonPath] | None = None  # the walked strings' paths, each once
        self.paths_of: tuple[Segment, ...] = ()  # ... of these walked strings

    def copy(self) -> Conversation:
        """The same last turn, to screen a next one with: screening replaces a
        conversation's fields, never edits them (the walks start anew), so the kept one
        stays as it was."""
        new = Conversation()
        for name in self.__slots__:
            setattr(new, name, getattr(self, name))
        new.walks = self.walks.next()
        return new

    def screened(
        self, kept: Kept, segs: tuple[Segment, ...], done: Collection[str | None], same: int
    ) -> list[Outcome]:
        """kept.screened(segs, done), the leading segments of the last turn's (the first
        `same` of `segs` are its very objects) taken as one slice of its outcomes;
        remembers this turn's."""
        frozen_done = frozenset(done)
        n = 0
        if kept is self.kept and frozen_done == self.done:
            n = same
        ends = self.ends[: n + 1]
        out = self.outcomes[: ends[-1]]
        if len(segs) > n:
            kept.prefetch(segs[n:], frozen_done)
        for s in segs[n:]:
            out += kept.screened((s,), frozen_done)
            ends.append(len(out))
        if n:
            kept.took(n)
            self.taken += n
        self.kept, self.done, self.segs, self.ends, self.outcomes = (
            kept,
            frozen_done,
            segs,
            ends,
            out,
        )
        return list(out)

    def walked(
        self, segs: tuple[Segment, ...], same: int
    ) -> tuple[frozenset[JsonPath], frozenset[JsonPath] | None]:
        """The paths of the walked strings `segs` (the first `same` the last turn's very
        objects); and which paths are covered now and were not, or the other way round
        (None: not known). Worked out from the last turn's for the strings it did not
        share, while every path was one string's only."""
        last, changed = self.paths, None
        n = 0
        if last is not None:  # the last turn's, or an earlier one's
            n = same if self.paths_of is self.segs else same_prefix(self.paths_of, segs)
        if last is not None and n:
            gone = frozenset(s.path for s in self.paths_of[n:])
            new = frozenset(s.path for s in segs[n:])
            # The last turn's paths were distinct: its first n strings' are `last - gone`.
            covered = (last - gone) | new
            if self.covered is last:  # what the items' outcomes were kept under
                changed = gone ^ new
        else:
            covered = frozenset(s.path for s in segs)
        unique = len(covered) == len(segs)  # so the next turn may work out its paths so
        self.paths, self.paths_of = (covered if unique else None), segs
        return covered, changed if unique else None

    def reusable(
        self,
        kept: Kept,
        key: str,
        items: tuple[Any, ...],
        covered: frozenset[JsonPath],
        changed: frozenset[JsonPath] | None = None,
    ) -> int:
        """How many leading items' unknown strings' outcomes the last turn's are (before
        this turn's edits are known: `owned` says which of them to sweep again);
        `changed`: the paths covered now or then, not both, when `covered` is worked out
        from the last turn's."""
        if kept is not self.kept or key != self.key:
            return 0
        k = min(same_prefix(self.items, items), len(self.units))
        if k:
            if changed is None:
                changed = covered.symmetric_difference(self.covered)
            for p in changed:  # a path covered now, or not
                if len(p) > 1 and p[0] == key and isinstance(p[1], int) and p[1] < k:
                    k = p[1]
        return k

    def units_before(
        self, k: int, owned: Collection[int]
    ) -> tuple[list[tuple[Outcome, ...]], list[int]]:
        """The first k items' outcomes, and which of them to sweep again (edited by this
        screening or the last: their entries are the last turn's, to be replaced)."""
        self.taken += k
        return list(self.units[:k]), sorted(j for j in {*owned, *self.owned} if j < k)

    def keep_units(
        self,
        key: str,
        items: tuple[Any, ...],
        owned: Collection[int],
        units: list[tuple[Outcome, ...]],
        covered: frozenset[JsonPath],
    ) -> None:
        self.key, self.items, self.owned, self.units, self.covered = (
            key,
            items,
            frozenset(owned),
            units,
            covered,
        )

    def frame_units(
        self, kept: Kept, frame: object | None, key: str, changed: frozenset[JsonPath] | None
    ) -> tuple[list[Outcome], list[Outcome]] | None:
        """The outcomes of the last turn's unknown strings outside the list (before it,
        after it), for the same frame object (same bytes, edited by neither screening),
        screens, and walked paths outside the list; else None."""
        if (
            frame is None
            or frame is not self.frame
            or kept is not self.kept
            or key != self.key
            or changed is None
            or any(p[0] != key for p in changed)
        ):
            return None
        self.taken += len(self.framed[0]) + len(self.framed[1])
        return self.framed

    def keep_frame(self, frame: object | None, before: list[Outcome], after: list[Outcome]) -> None:
        self.frame, self.framed = frame, (before, after)


def flat(units: list[tuple[Outcome, ...]]) -> list[Outcome]:
    return list(chain.from_iterable(units))


class Conversations:
    """The last turn of each conversation; one per gate (None: every string looked up).
    Bounded by count and by the bytes of the bodies they were read from: a conversation
    keeps its items' parse alive after the body and walk memos let it go, so at most
    `max_bytes` of bodies' worth is held (the oldest dropped first; one larger is not kept)."""

    def __init__(
        self, max_conversations: int = MAX_CONVERSATIONS, max_bytes: int = MAX_BYTES
    ) -> None:
        self.max = max_conversations
        self.max_bytes = max_bytes
        # each kept last turn, oldest first: its session, the turn, its body's size
        self._by: OrderedDict[int, tuple[str | None, Conversation, int]] = OrderedDict()
        self._next = 0
        self._bytes = 0
        self.taken = 0  # outcomes taken whole from a last turn (a figure for tests, benches)
        self.walked = 0  # list items whose walk was taken up from a last turn (the same)
        self.decided = 0  # tool calls whose decision was taken from a last turn (the same)
        self._lock = threading.Lock()

    def of(
        self, session: str | None, segs: Sequence[Segment], listed: bool = False
    ) -> Conversation:
        """A copy of the session's last turn whose segments `segs` start with the most of
        (`listed`: `segs` are the conversation list's items as read, and are compared with
        its items), or a new conversation."""
        with self._lock:
            # A candidate that differs where the best so far still agreed cannot share
            # more: it is not compared whole.
            best, most = None, 0
            for token, (whose, conv, _) in self._by.items():
                last: Sequence[Any] = conv.listed if listed else conv.segs
                if whose != session or not last or not segs or last[0] is not segs[0]:
                    continue
                if most and (
                    most >= len(last) or most >= len(segs) or last[most] is not segs[most]
                ):
                    continue
                if (k := same_prefix(last, segs)) > most:
                    best, most = token, k
            found = self._by[best][1].copy() if best is not None else Conversation()
        found.taken, found.source, found.shared = 0, best, most
        return found

    def put(self, session: str | None, conv: Conversation, size: int) -> None:
        """Keep `conv`, read from a body of `size` bytes, as a last turn of the session's:
        in place of the one it was copied from when it goes on from it (shares at least
        half of its segments: another conversation that only shares its start, a system
        prompt and tools, say, is kept beside it)."""
        with self._lock:
            self.taken += conv.taken
            self.walked += conv.walks.taken
            self.decided += conv.decided.taken
            src = self._by.get(conv.source) if conv.source is not None else None
            if src is not None and conv.shared * 2 >= len(
                src[1].listed if conv.listed else src[1].segs  # what `of` compared
            ):
                del self._by[conv.source]  # type: ignore[arg-type]
                self._bytes -= src[2]
            if size > self.max_bytes:
                return
            self._next += 1
            self._by[self._next] = (session, conv, size)
            self._bytes += size
            while len(self._by) > self.max or self._bytes > self.max_bytes:
                _, (_, _, dropped) = self._by.popitem(last=False)
                self._bytes -= dropped

    @property
    def bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._by)

    def clear(self) -> None:
        with self._lock:
            self._by.clear()
            self._bytes = 0
