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
"""

from __future__ import annotations

import threading
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from gate.providers.segments import JsonPath, Role, Segment, Strings, Unit
from gate.rules.engine import Policy
from gate.screen import content
from gate.screen.content import Outcome, SecretScreen
from gate.screen.fingerprints import DeniedIndex

MAX_CHARS = 64 << 20  # text of the strings remembered per context; all forgotten past it
MAX_CONTEXTS = 8  # rules, denied values and answers remembered at once (agents side by side)

_MISSING = object()


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


@dataclass(slots=True, eq=False)
class _Kept:
    context: Context
    outcomes: dict[Segment, Outcome | None] = field(default_factory=dict)
    # unit → (its strings, the ones no walker covered, their outcomes)
    units: dict[Unit, tuple[Strings, tuple[JsonPath, ...], tuple[Outcome, ...]]] = field(
        default_factory=dict
    )
    chars: int = 0


class ItemCache:
    """Outcomes of strings already screened, by content and context; one per gate."""

    def __init__(self, max_chars: int = MAX_CHARS) -> None:
        self._kept: list[_Kept] = []
        self._max = max_chars
        self._lock = threading.Lock()

    def _for(
        self,
        policy: Policy,
        index: DeniedIndex | None,
        secrets: SecretScreen | None,
        approved: frozenset[str],
    ) -> _Kept:
        with self._lock:
            for i, kept in enumerate(self._kept):
                if kept.context.same(
                    policy=policy, index=index, secrets=secrets, approved=approved
                ):
                    if i:
                        self._kept.insert(0, self._kept.pop(i))
                    return kept
            kept = _Kept(Context(policy, index, secrets, approved))
            self._kept.insert(0, kept)
            del self._kept[MAX_CONTEXTS:]
            return kept

    def _grow(self, kept: _Kept, chars: int) -> None:
        kept.chars += chars
        if kept.chars > self._max:
            with self._lock:
                kept.outcomes, kept.units, kept.chars = {}, {}, 0

    def screened(
        self,
        segs: Iterable[Segment],
        done: Container[str | None],
        index: DeniedIndex | None,
        secrets: SecretScreen | None,
        policy: Policy,
        approved: frozenset[str] = frozenset(),
    ) -> list[Outcome]:
        """content.screened, each string's outcome reused when it was worked out before."""
        kept = self._for(policy, index, secrets, approved)
        outcomes = kept.outcomes
        out: list[Outcome] = []
        added = 0
        for s in segs:
            if s.role is Role.TOOL_RESULT and s.call_id in done:
                continue  # withheld whole: gone from the body
            o = outcomes.get(s, _MISSING)
            if o is _MISSING:
                o = content.outcome(s, index, secrets, policy, approved)
                outcomes[s] = o
                added += len(s.text)
            if o is not None:
                out.append(o)  # type: ignore[arg-type]
        if added:
            self._grow(kept, added)
        return out

    def unknown(
        self,
        unit: Unit,
        strings: Strings,
        covered: Container[JsonPath],
        index: DeniedIndex | None,
        secrets: SecretScreen | None,
        policy: Policy,
        approved: frozenset[str] = frozenset(),
    ) -> tuple[Outcome, ...]:
        """The outcomes of one top-level item's strings no walker knows: content.unknown,
        then content.screened (they are attachments, never a withheld result)."""
        kept = self._for(policy, index, secrets, approved)
        uncovered = tuple(p for p, _ in strings[0] if p not in covered)
        hit = kept.units.get(unit)
        if hit is not None and hit[1] == uncovered and hit[0] == strings:
            return hit[2]
        extra = content.unknown(strings, covered, index, secrets)  # may raise Blocked
        found = tuple(content.screened(extra, (), index, secrets, policy, approved))
        kept.units[unit] = (strings, uncovered, found)
        self._grow(kept, sum(len(t) for _, t in strings[0]) + sum(map(len, strings[1])))
        return found

    def clear(self) -> None:
        with self._lock:
            self._kept = []
