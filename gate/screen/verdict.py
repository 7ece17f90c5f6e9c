"""What screening decides: the request as seen, what was withheld, what leaves."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum


class Blocked(Exception):
    """The request must not leave; the message tells the user why and what to do.
    `withheld` holds the audit records of the findings whose answer blocked it."""

    def __init__(self, message: str, withheld: tuple[dict[str, object], ...] = ()):
        super().__init__(message)
        self.withheld = withheld


@dataclass(frozen=True, slots=True, kw_only=True)
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
    # The conversation it belongs to, as the audit names it (audit/session.py): screening
    # reuses what it worked out for a conversation only within it.
    session: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """An `ask` finding: what a person is shown, never the value itself."""

    key: str  # keyed hash of the content: the same content, the same key
    question: str  # the question kind: "send-secret" | "send-denied-content"
    preview: str  # first and last 4 characters, the middle masked
    context: str  # the surrounding lines, every finding in them masked
    approved: bool = False  # in Outbound.approved: sent as is
    team: str | None = None  # keyed hash under the team key (team answers), if there is one


class Withholding(StrEnum):
    """What kind of thing was withheld: the audit's `kind`; never rename."""

    TOOL_RESULT = "tool-result"  # a tool call's result, by a deny or ask rule
    CONTENT = "content"  # a denied file's value, found in a string
    SECRET = "secret"  # noqa: S105 (a kind, not a password): a likely secret, by a detector


@dataclass(frozen=True, slots=True, kw_only=True)
class Withheld:
    """One thing withheld from a request, tagged by its kind; made by the constructor of
    its kind (tool_result, denied_content, secret), which says what each field holds."""

    kind: Withholding
    rule: str  # the rule's text (tool results, content) or the detector's id (secrets)
    where: str  # the rule's file:line, or a secret's tier and action
    # What it is about: a tool call's target, a denied file's path, a secret's detector kind.
    target: str | None
    call_id: str | None = None  # the call whose result held it, when known
    tool: str | None = None  # that call's tool
    count: int = 1
    fingerprint: str | None = None  # secrets: a keyed hash prefix, never the value
    asked: Asked | None = None  # set when the policy says ask
    decision: Mapping[str, str] | None = None  # who answered the question, and how

    @classmethod
    def tool_result(
        cls, *, call_id: str, tool: str, target: str | None, rule: str, where: str
    ) -> Withheld:
        """A call's result, by the deny or ask rule (`rule` at `where`) its action matched."""
        return cls(
            kind=Withholding.TOOL_RESULT,
            call_id=call_id,
            tool=tool,
            target=target,
            rule=rule,
            where=where,
        )

    @classmethod
    def denied_content(cls, *, path: str, rule: str, where: str, count: int = 1) -> Withheld:
        """The value of the denied file at `path`, found `count` times."""
        return cls(kind=Withholding.CONTENT, target=path, rule=rule, where=where, count=count)

    @classmethod
    def secret(
        cls,
        *,
        detector: str,
        rule_id: str,
        where: str,
        fingerprint: str,
        call_id: str | None = None,
        tool: str | None = None,
        count: int = 1,
        asked: Asked | None = None,
    ) -> Withheld:
        """A likely secret of kind `detector` (found by detector `rule_id`)."""
        return cls(
            kind=Withholding.SECRET,
            target=detector,
            rule=rule_id,
            where=where,
            fingerprint=fingerprint,
            call_id=call_id,
            tool=tool,
            count=count,
            asked=asked,
        )

    @property
    def detector(self) -> str | None:
        """A secret's detector kind (github-token, ...); None for any other kind."""
        return self.target if self.kind is Withholding.SECRET else None

    @property
    def file(self) -> str | None:
        """The file a tool result or a denied value came from; None for a secret."""
        return None if self.kind is Withholding.SECRET else self.target

    def record(self) -> dict[str, object]:
        """As written to the audit: where and why, never the content."""
        out: dict[str, object] = {
            "kind": str(self.kind),
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


@dataclass(frozen=True, slots=True, kw_only=True)
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
