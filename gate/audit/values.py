"""Did each value of a file leave: per value, sent (which requests, whether a person approved
it), withheld (by which rule or answer), or never seen."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gate.audit import search

if TYPE_CHECKING:
    from gate.audit.store import AuditStore


class Status(StrEnum):
    SENT = "sent"
    WITHHELD = "withheld"
    UNSEEN = "never seen"


@dataclass(frozen=True, slots=True, kw_only=True)
class Sent:
    request: int
    ts: float
    agent: str | None
    upstream: str
    path: str
    approved_by: str | None  # who let it through when gate asked ("person", "memory")
    snippet: str = ""  # around the value, the value itself masked


@dataclass(frozen=True, slots=True, kw_only=True)
class Held:
    request: int
    ts: float
    kind: str  # secret | content | tool-result | blocked
    rule: str
    answer: str | None  # the answer that kept it back when gate asked
    by: str | None
    blocked: bool  # the whole request was refused


@dataclass(frozen=True, slots=True)
class Answer:
    value: str  # "value 2 of .env": never the value itself
    sent: tuple[Sent, ...] = ()
    withheld: tuple[Held, ...] = ()

    @property
    def status(self) -> Status:
        return Status.SENT if self.sent else Status.WITHHELD if self.withheld else Status.UNSEEN

    def to_json(self) -> dict[str, Any]:
        return {
            "value": self.value,
            "status": str(self.status),
            "sent": [_fields(s) for s in self.sent],
            "withheld": [_fields(h) for h in self.withheld],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Lookup:
    """What to look for: labels in file order, a matcher over sent text giving (start, end,
    label), the keyed fingerprints of the values, and the file (its withheld tool results)."""

    labels: tuple[str, ...]
    match: Callable[[str], list[tuple[int, int, str]]]
    prints: dict[str, str] = field(default_factory=dict)
    file: Path | None = None


def answer(store: AuditStore, look: Lookup, since: float | None = None) -> list[Answer]:
    """One answer per label. A request that carried the value counts as sent even when gate
    withheld it elsewhere in the same body: the value left with it."""
    rows = {r["id"]: r for r in store.rows(1 << 62, since=since, body=False)}
    sent: dict[str, dict[int, Sent]] = {label: {} for label in look.labels}
    held: dict[str, dict[int, Held]] = {label: {} for label in look.labels}
    approvals: dict[tuple[str, int], str] = {}
    for row in rows.values():
        for entry in row["withheld"]:
            decision = entry.get("decision") or {}
            labels = _labels_of(entry, row, look)
            for label in labels:
                if decision.get("answer") == "approve":
                    approvals[(label, row["id"])] = str(decision.get("by") or "?")
                    continue
                held[label].setdefault(
                    row["id"],
                    Held(
                        request=row["id"],
                        ts=row["ts"],
                        kind=str(entry.get("kind") or "?"),
                        rule=str(entry.get("rule") or "?"),
                        answer=decision.get("answer"),
                        by=decision.get("by"),
                        blocked=row["verdict"] == "blocked",
                    ),
                )
    for found in search.scan(store, look.match, since, 1 << 62):
        for rid in found.requests:
            if rid in rows and found.what in sent:
                sent[found.what].setdefault(
                    rid, _sent(rows[rid], approvals.get((found.what, rid)), found.snippet)
                )
    for (label, rid), by in approvals.items():  # approved, so sent, even in a form not found
        sent[label].setdefault(rid, _sent(rows[rid], by, ""))
    return [
        Answer(
            label,
            tuple(sorted(sent[label].values(), key=lambda s: s.request)),
            tuple(h for rid, h in sorted(held[label].items()) if rid not in sent[label]),
        )
        for label in look.labels
    ]


def _labels_of(entry: dict[str, Any], row: dict[str, Any], look: Lookup) -> tuple[str, ...]:
    """Which values a withheld entry stands for: by fingerprint, or all of them when it is
    this file's content withheld as a whole (a denied read of the file)."""
    if (fp := entry.get("fingerprint")) in look.prints:
        return (look.prints[fp],)
    target = entry.get("target")
    if look.file is None or not target or entry.get("kind") not in ("tool-result", "content"):
        return ()
    where = Path(str(target)).expanduser()
    if not where.is_absolute():
        where = Path(row.get("project_root") or "/") / where
    try:
        same = where.resolve() == look.file.resolve()
    except OSError:
        same = False
    return look.labels if same else ()


def _sent(row: dict[str, Any], by: str | None, snippet: str) -> Sent:
    return Sent(
        request=row["id"],
        ts=row["ts"],
        agent=row["agent"],
        upstream=row["upstream"],
        path=row["path"],
        approved_by=by,
        snippet=snippet,
    )


def _fields(item: Sent | Held) -> dict[str, Any]:
    return {name: getattr(item, name) for name in item.__slots__}
