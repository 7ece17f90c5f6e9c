"""What screening decides: the request as seen, what was withheld, what leaves."""

from __future__ import annotations

from dataclasses import dataclass


class Blocked(Exception):
    """The request must not leave; the message tells the user why and what to do."""


@dataclass(frozen=True, slots=True)
class Outbound:
    path: str                 # the upstream path, query included
    body: bytes               # decoded (no content-encoding)
    agent: str | None         # from the run, or guessed from headers
    project_root: str | None  # from the run, if any
    unsafe_pass_non_json: bool = False  # the upstream's opt-out (config), never the default


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

    def record(self) -> dict[str, object]:
        """As written to the audit: where and why, never the content."""
        out: dict[str, object] = {"kind": self.kind, "call_id": self.call_id,
                                  "tool": self.tool, "target": self.target, "rule": self.rule,
                                  "where": self.where, "count": self.count}
        if self.fingerprint:
            out["fingerprint"] = self.fingerprint
        return out


@dataclass(frozen=True, slots=True)
class Verdict:
    body: bytes | None        # None: forward the original bytes untouched
    format: str | None
    model: str | None
    project_root: str | None
    withheld: tuple[Withheld, ...] = ()
