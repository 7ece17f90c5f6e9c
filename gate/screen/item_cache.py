"""What the content screens made of each conversation item's strings, kept for the next turn.

Agents resend the whole conversation every turn, so almost every string of a request was
screened on the one before. An outcome is a function of the string (its path, text, role
and call) and of the screens it met: the rules (`Policy`), the denied values (`DeniedIndex`),
the secret screen and the answers a person gave. Those are immutable objects that gate
replaces when anything under them changes (a rule file edited, a denied file rewritten, a
project root or run of its own), so an outcome is reused only for an equal string under the
very same objects (compared by identity, held here so that no other object can take their
place) and the same answers: exactly what screening it again would give.

Strings no walker knows (new fields, unknown blocks) are kept per top-level item: the item's
strings, and which of them the walk covered, must be equal for its outcomes to be reused.
A lookup that would raise (a denied value used as a key) is never kept, so it raises again.

An item resent unchanged is walked from the walk memo (gate/providers/history.py): its
strings and segments are the very objects of the turn before. They are immutable, so the
same object is an equal string: it is found by identity first (held, so that its id is
never another's), without hashing its text and path again, and an item's strings without
comparing them one by one (which of them the walk covered is still checked, as a set).
"""

from __future__ import annotations

import threading
from collections.abc import Container, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gate.agents.background import Quiet
from gate.providers.segments import JsonPath, Role, Segment, Strings, Unit
from gate.rules.engine import Policy
from gate.screen import content
from gate.screen.content import Outcome, SecretScreen
from gate.screen.fingerprints import DeniedIndex

if TYPE_CHECKING:
    from gate.screen.scan_pool import ScanPool

# At most MAX_CONTEXTS x MAX_CHARS characters held (64 MiB of ASCII text): a context past
# its share forgets all it kept and starts again.
MAX_CHARS = 16 << 20  # text of the strings remembered per context
MAX_CONTEXTS = 4  # rules, denied values and answers remembered at once (agents side by side)

Paths = frozenset[JsonPath]


@dataclass(frozen=True, slots=True, eq=False)
class Context:
    """The screens a string meets. Held, so identity comparisons stay meaningful."""

    policy: Policy
    index: DeniedIndex | None
    secrets: SecretScreen | None
    approved: frozenset[str]

    def same(
        self,
        *,
        policy: Policy,
        index: DeniedIndex | None,
        secrets: SecretScreen | None,
        approved: frozenset[str],
    ) -> bool:
        return (
            self.policy is policy
            and self.index is index
            and self.secrets is secrets
            and self.approved == approved
        )


class Kept:
    """What one context's screens made of the strings seen under it."""

    def __init__(self, cache: ItemCache, context: Context) -> None:
        self.context = context
        self._cache = cache
        self.outcomes: dict[Segment, Outcome | None] = {}
        # id() of a segment → (the segment, its outcome)
        self.same: dict[int, tuple[Segment, Outcome | None]] = {}
        # unit → (its strings, the ones no walker covered, their outcomes; as sets: the
        # strings' paths, the uncovered ones)
        self.units: dict[
            Unit, tuple[Strings, tuple[JsonPath, ...], tuple[Outcome, ...], Paths, Paths]
        ] = {}
        self.chars = 0

    def screened(self, segs: Iterable[Segment], done: Container[str | None]) -> list[Outcome]:
        """content.screened, each string's outcome reused when it was worked out before."""
        c = self.context
        outcomes, same = self.outcomes, self.same
        out: list[Outcome] = []
        added = reused = 0
        for s in segs:
            if s.role is Role.TOOL_RESULT and s.call_id in done:
                continue  # withheld whole: gone from the body
            held = same.get(id(s))
            o: Outcome | None
            if held is not None and held[0] is s:
                o = held[1]
                reused += 1
            else:
                if s in outcomes:  # an equal segment, walked anew: by identity from now on
                    o = outcomes[s]
                    reused += 1
                else:
                    o = outcomes[s] = content.outcome(s, c.index, c.secrets, c.policy, c.approved)
                same[id(s)] = (s, o)
                added += len(s.text)  # held: its own text
            if o is not None:
                out.append(o)
        self._cache.reused += reused
        if added:
            self._grow(added)
        return out

    def prefetch(self, segs: Iterable[Segment], done: Container[str | None]) -> None:
        """Before `screened(segs, done)`: when the strings it would screen for the first time
        are many (a cold body), a screening worker works them out off this process's
        interpreter lock, and what it found is filed where `screened` looks first."""
        c, outcomes, same, pool = self.context, self.outcomes, self.same, self._cache.pool
        if pool is None or (c.index is None and c.secrets is None):
            return
        new = [
            s.text
            for s in segs
            if not (s.role is Role.TOOL_RESULT and s.call_id in done)
            and ((held := same.get(id(s))) is None or held[0] is not s)
            and s not in outcomes
        ]
        if sum(map(len, new)) < pool.min_chars:
            return  # screened in place: the hop costs more
        scanner = c.secrets.scanner if c.secrets is not None else None
        got = pool.screen(new, c.index, scanner)
        if got is None:
            return  # no worker now: screened in place
        for text, cold in zip(new, got, strict=True):
            if c.index is not None:
                text = c.index.remember(text, cold.hits)
            if scanner is not None:
                scanner.remember(text, cold.secrets)

    def took(self, n: int) -> None:
        """n outcomes were reused from a conversation's last turn (gate/screen/prefix.py)."""
        self._cache.reused += n

    def unknown(
        self, unit: Unit, strings: Strings, covered: Container[JsonPath]
    ) -> tuple[Outcome, ...]:
        """The outcomes of one top-level item's strings no walker knows: content.unknown,
        then content.screened (they are attachments, never a withheld result)."""
        c = self.context
        hit = self.units.get(unit)
        if (
            hit is not None
            and hit[0] is strings
            and isinstance(covered, set | frozenset)
            and hit[3].difference(covered) == hit[4]  # the same strings, the same uncovered
        ):
            return hit[2]
        uncovered = tuple(p for p, _ in strings[0] if p not in covered)
        if hit is not None and hit[1] == uncovered and hit[0] == strings:
            self.units[unit] = (strings, *hit[1:])  # found by identity from now on
            return hit[2]
        extra = content.unknown(strings, covered, c.index, c.secrets)  # may raise Blocked
        found = tuple(content.screened(extra, (), c.index, c.secrets, c.policy, c.approved))
        paths = frozenset(p for p, _ in strings[0])
        self.units[unit] = (strings, uncovered, found, paths, frozenset(uncovered))
        self._grow(sum(len(t) for _, t in strings[0]) + sum(map(len, strings[1])))
        return found

    def _grow(self, chars: int) -> None:
        self.chars += chars
        if self.chars > self._cache.max_chars:  # new dicts: a reader elsewhere keeps its own
            self.outcomes, self.same, self.units, self.chars = {}, {}, {}, 0


class ItemCache:
    """Outcomes of strings already screened, by content and context; one per gate."""

    def __init__(self, max_chars: int = MAX_CHARS, pool: ScanPool | None = None) -> None:
        self.max_chars = max_chars
        # Where a cold batch of new strings is worked out (None: always in place).
        self.pool = pool
        self.reused = 0  # strings whose outcome was reused (a figure for tests and benches)
        self.quiet = Quiet(max_chars)  # tool outputs that start no background task
        self._kept: list[Kept] = []
        self._lock = threading.Lock()

    def under(
        self,
        policy: Policy,
        index: DeniedIndex | None,
        secrets: SecretScreen | None,
        approved: frozenset[str],
    ) -> Kept:
        """What was worked out under these very screens and answers (new if nothing was)."""
        with self._lock:
            for i, kept in enumerate(self._kept):
                if kept.context.same(
                    policy=policy, index=index, secrets=secrets, approved=approved
                ):
                    if i:
                        self._kept.insert(0, self._kept.pop(i))
                    return kept
            kept = Kept(self, Context(policy, index, secrets, approved))
            self._kept.insert(0, kept)
            del self._kept[MAX_CONTEXTS:]
            return kept

    def clear(self) -> None:
        with self._lock:
            self._kept = []
            self.quiet = Quiet(self.max_chars)
