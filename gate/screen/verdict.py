"""What screening decides: the request as seen, what was withheld, what leaves."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


class Blocked(Exception):
    """The request must not leave; the message tells the user why and what to do.
    `withheld` holds the audit records of the findings whose answer blocked it."""

    def __init__(self, message: str, withheld: tuple[dict[str, object], ...] = ()):
        super().__init__(message)
        self.withheld = withheld


@dataclass(frozen=True, slots=True)
class Outbound:
    path: str  # the upstream path, query included
    body: bytes  # decoded (no content-encoding)
    agent: str | None  # from the run, or guessed from headers
    project_root: str | None  # from the run, if any
    unsafe_pass_non_json: bool = False  # the upstream's opt-out (config), never the default
    # Ask findings a person (or remembered answer) approved, by Asked.key: these leave as is.
    approved: frozenset[str] = frozenset()
    # The request headers that say how to read the body (Content-Type, an upload's command),
    # lower-case names.
    headers: tuple[tuple[str, str], ...] = ()
    # The run's project root, anchored when it started: rules come from here, never from a
    # root found again from `project_root` (which only resolves relative paths).
    root: str | None = None


@dataclass(frozen=True, slots=True)
class Asked:
    """An `ask` finding: what a person is shown, never the value itself."""

    key: str  # keyed hash of the content: the same content, the same key
    question: str  # the question kind: "send-secret" | "send-denied-content"
    preview: str  # first and last 4 characters, the middle masked
    context: str  # the surrounding lines, every finding in them masked
    approved: bool = False  # in Outbound.approved: sent as is
    team: str | None = None  # keyed hash under the team key (team answers), if there is one


@dataclass(frozen=True, slots=True)
class Withheld:
    call_id: str | None
    tool: str | None
    target: str | None
    rule: str
    where: str
    # "tool-result"; "content": a denied file's value found in a string; "secret"
    kind: str = "tool-result"
    count: int = 1
    fingerprint: str | None = None  # secrets: a keyed hash prefix, never the value
    asked: Asked | None = None  # set when the policy says ask
    decision: Mapping[str, str] | None = None  # who answered the question, and how

    def record(self) -> dict[str, object]:
        """As written to the audit: where and why, never the content."""
        out: dict[str, object] = {
            "kind": self.kind,
            "call_id": self.call_id,
            "tool": self.tool,
            "target": self.target,
            "rule": self.rule,
            "where": self.where,
            "count": self.count,
        }
        if self.fingerprint:
            out["fingerprint"] = self.fingerprint
        if self.decision:
            out["decision"] = dict(self.decision)
        return out


@dataclass(frozen=True, slots=True)
class Verdict:
    body: bytes | None  # None: forward the original bytes untouched
    format: str | None
    model: str | None
    project_root: str | None
    withheld: tuple[Withheld, ...] = ()

    @property
    def asks(self) -> tuple[Withheld, ...]:
        """Ask findings nobody approved yet (replaced in `body`, like a redaction)."""
        return tuple(w for w in self.withheld if w.asked and not w.asked.approved)
