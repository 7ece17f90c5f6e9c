"""The rules of a request that only states its working directory: that directory's and
every known project's, the strictest decision of them all."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import ClassVar

from gate.agents import shell
from gate.agents.actions import Action, Verb
from gate.rules.engine import Decision, Policy
from gate.rules.model import Effect

# Strictest first; a tie goes to the stated directory's own rules (the first part).
_RANK = {Effect.DENY: 0, Effect.ASK: 1, Effect.ALLOW: 2, None: 3}


@dataclass(frozen=True, slots=True)
class Joined(Policy):
    """A policy made of (policy, project root) parts. A request says where it comes from
    in text the agent writes, so naming another directory must never drop the rules of the
    project it really runs in: each call is decided by every part, as if run there, and
    the strictest decision stands. The layers' settings for likely secrets join the same
    way (each project's file can only tighten; the user's and managed files are the same
    in every part)."""

    # Each part decides the action as run in its root, which reads the files that exist
    # there: more than the action's own targets.
    BY_STAMP: ClassVar[bool] = False

    parts: tuple[tuple[Policy, str | None], ...] = ()

    def decide(
        self,
        action: Action,
        project_root: str | None,
        seen: dict[tuple[str, str | None], object] | None = None,
    ) -> Decision:
        best: Decision | None = None
        for policy, root in self.parts:
            decision = policy.decide(_as_run_in(action, root), root, seen)
            if best is None or _RANK[decision.effect] < _RANK[best.effect]:
                best = decision
        return best if best is not None else Decision(None, None)


def join(parts: list[tuple[Policy, str | None]]) -> Policy:
    """One policy deciding as the strictest of `parts`; the first part alone is itself."""
    parts = list(dict.fromkeys(parts))
    if len(parts) == 1:
        return parts[0][0]
    policies = [p for p, _ in parts]
    return Joined(
        rules=tuple(dict.fromkeys(r for p in policies for r in p.rules)),
        ignored=tuple(dict.fromkeys(r for p in policies for r in p.ignored)),
        warnings=tuple(dict.fromkeys(w for p in policies for w in p.warnings)),
        lockdown=any(p.lockdown for p in policies),
        secrets=tuple(s for p in policies for s in p.secrets),
        parts=tuple(parts),
    )


def _as_run_in(action: Action, root: str | None) -> Action:
    """The action as if the agent ran in `root`: a command's relative paths read from there
    too (the paths that exist there), beside the ones read from the stated directory."""
    if root is None or action.verb is not Verb.EXEC or not action.target:
        return action
    more = tuple(
        p for p in shell.reads(action.target, root) if p not in action.reads and os.path.lexists(p)
    )
    return replace(action, reads=action.reads + more) if more else action
