"""Did a value found in history also leave through gate? Answered from the audit, read
only: withheld entries by the secret's keyed hash (or the denied file it came from), and
the bodies gate forwarded, by full-text search confirmed in the chunk itself."""

from __future__ import annotations

import datetime as dt
import re
import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from gate.audit import blocks, chunks, report

_WORD = re.compile(r"[^\W_]+")  # tokens as the audit's FTS5 unicode61 tokenizer cuts them


class Seen(StrEnum):
    """Public ids, written to --json output."""

    SENT = "sent"
    WITHHELD = "withheld"
    NOT_SEEN = "not-seen"
    UNKNOWN = "unknown"  # the audit could not be read


@dataclass(frozen=True, slots=True)
class Gate:
    seen: Seen
    ts: float | None = None  # the first time

    def __str__(self) -> str:
        day = (
            dt.datetime.fromtimestamp(self.ts, dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
            if self.ts is not None
            else ""
        )
        if self.seen is Seen.SENT:
            return f"sent via gate on {day}"
        if self.seen is Seen.WITHHELD:
            return f"withheld by gate on {day}"
        if self.seen is Seen.UNKNOWN:
            return "unknown (gate's audit could not be read)"
        return "not seen by gate"


@dataclass(frozen=True, slots=True)
class Value:
    value: str  # in memory only
    source: str | None  # the denied file it came from, if it is a denied-file value


def check(audit: Path, values: dict[str, Value]) -> dict[str, Gate]:
    """Per digest: sent (the value is in a body gate forwarded), else withheld (gate
    replaced it), else not seen. No audit: nothing was seen."""
    out = {d: Gate(Seen.NOT_SEEN) for d in values}
    try:
        db = report.connect(audit) if values else None
        if db is None:
            return out
        try:
            withheld = _withheld(db, values)
            sent = _sent(db, values)
        finally:
            db.close()
    except (sqlite3.Error, report.BadRow):
        # Never "not seen" when gate cannot tell: an unreadable audit says nothing.
        return {d: Gate(Seen.UNKNOWN) for d in values}
    for d in values:
        if d in sent:
            out[d] = Gate(Seen.SENT, sent[d])
        elif d in withheld:
            out[d] = Gate(Seen.WITHHELD, withheld[d])
    return out


def _withheld(db: sqlite3.Connection, values: dict[str, Value]) -> dict[str, float]:
    by_fp = {d[:16]: d for d in values}
    by_source: dict[str, list[str]] = {}
    for d, v in values.items():
        if v.source:
            by_source.setdefault(v.source, []).append(d)
    out: dict[str, float] = {}
    for row_id, ts, text in db.execute(
        "SELECT id, ts, withheld FROM requests WHERE withheld != '[]' ORDER BY id"
    ):
        for entry in report.withheld_list(row_id, text):
            hits = (
                [by_fp[str(entry.get("fingerprint"))]]
                if entry.get("kind") == "secret" and entry.get("fingerprint") in by_fp
                else by_source.get(str(entry.get("target")), [])
                if entry.get("kind") in ("content", "tool-result")
                else []
            )
            for d in hits:
                out.setdefault(d, ts)
    return out


def _sent(db: sqlite3.Connection, values: dict[str, Value]) -> dict[str, float]:
    """Chunks holding each value (FTS narrows, the chunk's text confirms; chunks the gate
    has not indexed yet are read too), then the first request that carried one."""
    pending = [cid for (cid,) in db.execute("SELECT id FROM chunks WHERE indexed = 0")]
    holding: dict[int, set[str]] = {}
    for d, v in values.items():
        words = _WORD.findall(v.value)
        if not words:
            continue
        query = " AND ".join('"' + w.replace('"', '""') + '"' for w in words)
        try:
            ids = [
                cid
                for (cid,) in db.execute(
                    "SELECT rowid FROM chunk_text WHERE chunk_text MATCH ?", (query,)
                )
            ]
        except sqlite3.Error:
            ids = []
        for cid, raw in blocks.read(db, [*ids, *pending]).items():
            if v.value in chunks.text_of(raw) or v.value.encode() in raw:
                holding.setdefault(cid, set()).add(d)
    out: dict[str, float] = {}
    if not holding:
        return out
    for ts, blob in db.execute(
        "SELECT ts, chunk_refs FROM requests WHERE chunk_refs IS NOT NULL"
        " AND verdict != 'blocked' ORDER BY id"
    ):
        for cid in set(chunks.unpack_refs(blob)) & holding.keys():
            for d in holding[cid]:
                out.setdefault(d, ts)
    return out
