"""What screening one body worked out: its verdict's parts, and what the next turn of the
same conversation can reuse."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from loguru import logger

from gate.agents.actions import Action
from gate.providers.segments import ToolCall, Walk
from gate.rules.engine import Decision, Policy
from gate.screen.body_items import Body
from gate.screen.codec import dump
from gate.screen.content import Outcome
from gate.screen.fingerprints import DeniedIndex
from gate.screen.verdict import Outbound, Verdict, Withheld


@dataclass(frozen=True, slots=True)
class Worked:
    """What screening one body worked out: its verdict's parts, and what the next turn of
    the same conversation can reuse (gate/screen/turns.py)."""

    req: Outbound
    walk: Walk
    body: Any  # as edited
    cwd: str | None
    root: str | None
    policy: Policy
    index: DeniedIndex | None
    # Each tool call: its action (worked out for unanswered calls too), and for an answered
    # one its decision and what its rule withheld.
    calls: tuple[tuple[ToolCall, Action, Decision | None, Withheld | None], ...]
    outcomes: tuple[Outcome, ...]  # of the walk's strings, in its order
    extras: tuple[Outcome, ...]  # of strings no walker knows, in body order
    withheld: tuple[Withheld, ...]
    model: str | None
    read: Body | None = None  # the body as read item by item, if it was

    @property
    def rewrite(self) -> bool:
        """Whether the body leaves edited (findings a person approved leave as they are)."""
        return any(not (w.asked and w.asked.approved) for w in self.withheld)

    def verdict(self, out: bytes | None = None) -> Verdict:
        if self.rewrite:
            logger.debug(
                "withheld {} item(s): {}",
                len(self.withheld),
                ", ".join(sorted({w.rule for w in self.withheld})),
            )
            if out is None:
                out = self.read.dump() if self.read is not None else dump(self.body)
        return Verdict(
            body=out if self.rewrite else None,
            format=self.walk.format,
            model=self.model,
            project_root=self.root,
            withheld=self.withheld,
        )
