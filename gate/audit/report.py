"""The queries behind `gate report` and `gate export`.

They read only the metadata columns of the `requests` table, whose meanings are stable
while the audit's storage changes around them; the body column is never selected, so
neither a report nor an export can carry what an agent sent.
"""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import orjson

# Every column a report or an export may read. Not "body": see the module docstring.
COLUMNS = (
    "id",
    "ts",
    "run_id",
    "agent",
    "upstream",
    "host",
    "method",
    "path",
    "model",
    "project_root",
    "request_bytes",
    "verdict",
    "withheld",
    "reason",
    "status",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "error",
    "user_name",
)
EXPORT_SCHEMA = 1  # bump when an export field changes meaning; never rename a field

# A request that never reached its provider (unreachable, refused, reset before any reply):
# its row holds the error and no status. It is shown and counted as `failed`, never as
# forwarded or sent, wherever verdicts are shown (one definition for SQL and for rows).
FAILED = "failed"
_SHOWN = (
    f"CASE WHEN verdict != 'blocked' AND error IS NOT NULL AND status IS NULL"
    f" THEN '{FAILED}' ELSE verdict END"
)


def shown_sql() -> str:
    """shown_verdict as an SQL expression over a requests row."""
    return _SHOWN


def shown_verdict(row: dict[str, Any]) -> str:
    """The verdict as the reading commands show it: `failed` for a request that did not
    reach its provider, else the one recorded."""
    if row.get("verdict") != "blocked" and row.get("error") and row.get("status") is None:
        return FAILED
    return str(row.get("verdict") or "-")


# One pass over the period: a row per (day, host, agent, model, verdict, blocked reason)
# combination, which stay few however many requests there are; the tables are sums of it.
# Days are local calendar days, like --since.
_CUBE = """
    SELECT date(ts, 'unixepoch', 'localtime'), host, agent, model, {shown},
           CASE WHEN verdict = 'blocked' THEN reason END,
           COUNT(*), SUM(verdict = 'blocked'),
           TOTAL(CASE WHEN {shown} NOT IN ('blocked', 'failed')
                 THEN request_bytes END),
           TOTAL(input_tokens), TOTAL(output_tokens),
           TOTAL(cache_read_tokens), TOTAL(cache_creation_tokens), MIN(ts), MAX(ts)
    FROM requests {where} GROUP BY 1, 2, 3, 4, 5, 6
"""


class BadRow(ValueError):
    """A row whose withheld list is not what gate writes (damaged or hand-edited)."""


@dataclass(frozen=True, slots=True)
class Traffic:
    """Requests in one group. Blocked and failed requests count as requests, but their
    bytes never reached a provider, so bytes_sent leaves them out."""

    key: str | None
    requests: int
    blocked: int
    bytes_sent: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_creation_tokens: int

    @classmethod
    def none(cls, key: str | None) -> Traffic:
        """A group that sent nothing."""
        return cls(
            key=key,
            requests=0,
            blocked=0,
            bytes_sent=0,
            input_tokens=0,
            output_tokens=0,
            cache_read_tokens=0,
            cache_creation_tokens=0,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class WithheldCount:
    """Findings of one kind and rule. Agents resend the whole conversation each turn, so
    one file or secret shows up again in every later request: `requests` says in how many
    requests, `items` how many entries were withheld, `occurrences` in how many places.
    `approved` counts the entries a person or a remembered answer let through: those were
    sent, so they are never counted as withheld."""

    kind: str
    rule: str
    items: int
    occurrences: int
    requests: int
    approved: int = 0


@dataclass(frozen=True, slots=True)
class BlockedCount:
    reason: str | None
    requests: int


@dataclass(frozen=True, slots=True)
class AnswerCount:
    """Questions of one kind answered one way by one party. `questions` counts decision
    ids: a question that covers several withheld entries, or recurs in the resent history
    of later requests, counts once (for `memory`, the id is the remembered decision's, so
    it counts the remembered decisions used). `items` counts the entries they settled."""

    question: str
    answer: str
    by: str
    questions: int
    items: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Report:
    since: float | None
    generated: float
    first_ts: float | None
    last_ts: float | None
    totals: Traffic
    verdicts: dict[str, int]
    by_day: tuple[Traffic, ...]
    by_host: tuple[Traffic, ...]
    by_agent: tuple[Traffic, ...]
    by_model: tuple[Traffic, ...]
    withheld: tuple[WithheldCount, ...]
    blocked: tuple[BlockedCount, ...]
    questions: tuple[AnswerCount, ...]

    @property
    def empty(self) -> bool:
        return self.totals.requests == 0

    def as_json(self) -> dict[str, Any]:
        return asdict(self)


def connect(path: Path) -> sqlite3.Connection | None:
    """A read-only connection to the audit, or None when there is none yet (a report never
    creates one). Raises sqlite3.Error when the file is not a readable audit."""
    if not path.exists():
        return None
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5.0)
    try:
        db.execute("SELECT id FROM requests LIMIT 1").fetchall()
    except sqlite3.Error:
        db.close()
        raise
    return db


def _where(since: float | None, *more: str) -> tuple[str, tuple[float, ...]]:
    """The WHERE clause for a period. Without --since there is none: SQLite would
    otherwise walk the ts index and fetch every row through it, slower than a plain scan."""
    terms = [*(["ts >= ?"] if since is not None else []), *more]
    return ("WHERE " + " AND ".join(terms) if terms else "", (since,) if since is not None else ())


def build(db: sqlite3.Connection | None, since: float | None = None) -> Report:
    """Every aggregate of the report, for requests at or after `since` (all when None).
    Raises BadRow naming the request whose withheld list is unreadable."""
    groups: dict[str, dict[str | None, list[int]]] = {
        name: {} for name in ("all", "day", "host", "agent", "model")
    }
    verdicts: dict[str, int] = {}
    blocked: dict[str | None, int] = {}
    first = last = None
    where, args = _where(since)
    cube = db.execute(_CUBE.format(where=where, shown=_SHOWN), args) if db is not None else ()
    for day, host, agent, model, verdict, reason, *sums, lo, hi in cube:
        for name, key in (
            ("all", "all"),
            ("day", day),
            ("host", host),
            ("agent", agent),
            ("model", model),
        ):
            tally = groups[name].setdefault(key, [0] * len(sums))
            for i, n in enumerate(sums):
                tally[i] += int(n)
        verdicts[verdict] = verdicts.get(verdict, 0) + sums[0]
        if verdict == "blocked":
            blocked[reason] = blocked.get(reason, 0) + sums[0]
        first = lo if first is None else min(first, lo)
        last = hi if last is None else max(last, hi)
    traffic = {
        name: [Traffic(key, *tally) for key, tally in rows.items()] for name, rows in groups.items()
    }
    withheld, questions = _withheld(db, since)
    return Report(
        since=since,
        generated=time.time(),
        first_ts=first,
        last_ts=last,
        totals=(traffic["all"] or [Traffic.none("all")])[0],
        verdicts=dict(sorted(verdicts.items())),
        by_day=tuple(sorted(traffic["day"], key=lambda t: t.key or "")),
        by_host=_busiest(traffic["host"]),
        by_agent=_busiest(traffic["agent"]),
        by_model=_busiest(traffic["model"]),
        withheld=withheld,
        blocked=tuple(
            BlockedCount(r, n)
            for r, n in sorted(blocked.items(), key=lambda p: (-p[1], p[0] or ""))
        ),
        questions=questions,
    )


def _busiest(rows: list[Traffic]) -> tuple[Traffic, ...]:
    return tuple(sorted(rows, key=lambda t: (-t.requests, t.key or "")))


def _withheld(
    db: sqlite3.Connection | None, since: float | None
) -> tuple[tuple[WithheldCount, ...], tuple[AnswerCount, ...]]:
    counts: dict[tuple[str, str], list[int]] = {}
    seen_in: dict[tuple[str, str], set[int]] = {}
    asked: dict[tuple[str, str, str], set[str]] = {}
    settled: dict[tuple[str, str, str], int] = {}
    where, args = _where(since, "withheld != '[]'")
    rows = () if db is None else db.execute(f"SELECT id, withheld FROM requests {where}", args)  # noqa: S608 (our clauses)
    for row_id, text in rows:
        for n, entry in enumerate(withheld_list(row_id, text)):
            key = (str(entry.get("kind", "?")), str(entry.get("rule", "?")))
            tally = counts.setdefault(key, [0, 0, 0])
            decision = decision_of(row_id, entry)
            if approved(decision):
                tally[2] += 1
            else:
                tally[0] += 1
                tally[1] += _count(entry.get("count", 1))
                seen_in.setdefault(key, set()).add(row_id)
            if decision is not None:
                how = (
                    str(decision.get("question", "?")),
                    str(decision.get("answer", "?")),
                    str(decision.get("by", "?")),
                )
                asked.setdefault(how, set()).add(str(decision.get("id") or f"{row_id}/{n}"))
                settled[how] = settled.get(how, 0) + 1
    withheld = sorted(
        (
            WithheldCount(
                kind=k,
                rule=r,
                items=c[0],
                occurrences=c[1],
                requests=len(seen_in.get((k, r), ())),
                approved=c[2],
            )
            for (k, r), c in counts.items()
        ),
        key=lambda w: (-w.items, w.kind, w.rule),
    )
    answers = sorted(
        (AnswerCount(*how, len(ids), settled[how]) for how, ids in asked.items()),
        key=lambda x: (-x.questions, x.question, x.answer, x.by),
    )
    return tuple(withheld), tuple(answers)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 1


def withheld_list(row_id: int, text: str | None) -> list[dict[str, Any]]:
    """A row's withheld entries; BadRow naming the request when they are not a JSON
    list of objects (a damaged or hand-edited audit must not be silently under-counted)."""
    try:
        entries = orjson.loads(text or "[]")
    except ValueError:
        entries = None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise BadRow(f"request {row_id}: withheld is not a JSON list of objects")
    return entries


def decision_of(row_id: int, entry: dict[str, Any]) -> dict[str, Any] | None:
    decision = entry.get("decision")
    if decision is not None and not isinstance(decision, dict):
        raise BadRow(f"request {row_id}: a withheld entry's decision is not an object")
    return decision


def approved(decision: dict[str, Any] | None) -> bool:
    """Whether a finding was let through (so sent) by the answer to its question."""
    return decision is not None and decision.get("answer") == "approve"


def export_rows(
    db: sqlite3.Connection | None, since: float | None = None
) -> Iterator[dict[str, Any]]:
    """One flat object per request, oldest first, streamed: the metadata, the withheld
    entries, and the decisions taken on them (each once)."""
    if db is None:
        return
    where, args = _where(since)
    cur = db.execute(
        f"SELECT {', '.join(COLUMNS)} FROM requests {where}"  # noqa: S608
        " ORDER BY ts, id",
        args,
    )
    for values in cur:
        row = dict(zip(COLUMNS, values, strict=True))
        withheld = withheld_list(row["id"], row["withheld"])
        decisions: dict[str, dict[str, Any]] = {}
        for n, entry in enumerate(withheld):
            if (decision := decision_of(row["id"], entry)) is not None:
                decisions.setdefault(str(decision.get("id") or n), decision)
        yield {
            "schema": EXPORT_SCHEMA,
            "time": dt.datetime.fromtimestamp(row["ts"], dt.UTC).isoformat(),
            **row,
            "withheld": withheld,
            "decisions": list(decisions.values()),
        }


def export_lines(db: sqlite3.Connection | None, since: float | None = None) -> Iterator[bytes]:
    """`gate export --jsonl`: each export row as one line of JSON (UTF-8, no spaces)."""
    for row in export_rows(db, since):
        yield orjson.dumps(row, option=orjson.OPT_APPEND_NEWLINE)
