"""Forward mode's record of connections gate relays unread (or refuses): never silent."""

from __future__ import annotations

import time
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from gate.audit.connected import Connected


class Kind(StrEnum):
    TUNNEL = "tunnel"  # a CONNECT relayed as opaque bytes
    HTTP = "http"  # a plain-HTTP request relayed unread
    BLOCKED = "blocked"  # refused by the egress policy


@dataclass(frozen=True, slots=True, kw_only=True)
class Opened:
    host: str
    port: int
    kind: Kind
    agent: str | None = None
    run_id: str | None = None
    reason: str | None = None


def opened(audit: Connected, t: Opened) -> int:
    """Write the row as the connection opens, so a crash still leaves it in the audit."""
    cur = audit.conn().execute(
        "INSERT INTO tunnels (ts, host, port, kind, agent, run_id, reason)"
        " VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING id",  # the row id on SQLite and PostgreSQL
        (time.time(), t.host, t.port, t.kind.value, t.agent, t.run_id, t.reason),
    )
    return int(cur.fetchone()[0])


def closed(audit: Connected, row: int, bytes_out: int, bytes_in: int) -> None:
    audit.conn().execute(
        "UPDATE tunnels SET ended=?, bytes_out=?, bytes_in=? WHERE id=?",
        (time.time(), bytes_out, bytes_in, row),
    )


def rows(
    audit: Connected,
    limit: int = 100,
    *,
    since: float | None = None,
    agent: str | None = None,
    run_id: str | None = None,
    kind: Kind | None = None,
) -> list[dict[str, Any]]:
    """Newest first, optionally only those since a time, of an agent, run or kind."""
    where, args = ["1=1"], []
    for sql, value in (
        ("ts >= ?", since),
        ("agent = ?", agent),
        ("run_id = ?", run_id),
        ("kind = ?", kind.value if kind else None),
    ):
        if value is not None:
            where.append(sql)
            args.append(value)
    cur = audit.conn().execute(
        f"SELECT * FROM tunnels WHERE {' AND '.join(where)}"  # noqa: S608 (our own SQL)
        " ORDER BY id DESC LIMIT ?",
        (*args, limit),
    )
    return [dict(r) for r in cur.fetchall()]


def prune(db: Any, before: float) -> int:
    """Drop the rows of connections opened before `before` (audit retention)."""
    return int(db.execute("DELETE FROM tunnels WHERE ts < ?", (before,)).rowcount or 0)


def drop_oldest(db: Any, n: int) -> int:
    """Drop the `n` oldest rows (the size cap, once no request is left to drop)."""
    return int(
        db.execute(
            "DELETE FROM tunnels WHERE id IN (SELECT id FROM tunnels ORDER BY id LIMIT ?)", (n,)
        ).rowcount
        or 0
    )
