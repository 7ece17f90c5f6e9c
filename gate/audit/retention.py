"""Retention: drop the oldest requests (by age, then by size), then the chunks no request
uses any more, keeping the chain verifiable from the first remaining row."""

from __future__ import annotations

import sqlite3
import time

from gate.audit import chain, tunnels
from gate.audit.connected import Connected
from gate.audit.garbage import Pruned, collect_garbage

__all__ = ["Pruned", "prune", "used_bytes"]


def prune(store: Connected, now: float | None = None) -> Pruned:
    """Apply audit.retention_days, then audit.max_size_mb. Rows go oldest first (a prefix,
    so the chain stays one piece); the last one dropped becomes the chain's anchor. On
    PostgreSQL, whole days go (pg_schema.py)."""
    if store.engine.postgres:
        from gate.audit import pg_schema

        return pg_schema.prune(store, now)
    db = store.conn()
    settings = store.settings
    before = used_bytes(db)
    cutoff = (time.time() if now is None else now) - settings.retention_days * 86400
    last = db.execute("SELECT MAX(id) FROM requests WHERE ts < ?", (cutoff,)).fetchone()[0]
    dropped = _drop_through(db, last) if last is not None else 0
    freed = collect_garbage(db)
    gone = tunnels.prune(db, cutoff)
    capped = 0
    cap = settings.max_size_mb << 20 if settings.max_size_mb else None
    while cap is not None and used_bytes(db) > cap:
        # A tenth of what is left per round: sizes are only known once chunks are freed.
        count = db.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
        if not count:  # connection rows alone over the cap (a flood of refusals): theirs go
            left = db.execute("SELECT COUNT(*) FROM tunnels").fetchone()[0]
            if not left:
                break
            gone += tunnels.drop_oldest(db, max(1, left // 10))
            continue
        last = db.execute(
            "SELECT id FROM requests ORDER BY id LIMIT 1 OFFSET ?", (max(0, count // 10 - 1),)
        ).fetchone()[0]
        capped += _drop_through(db, last)
        freed += collect_garbage(db)
    if capped:  # none older than the oldest request kept: they are what the cap frees last
        oldest = db.execute("SELECT MIN(ts) FROM requests").fetchone()[0]
        gone += tunnels.prune(db, float("inf") if oldest is None else oldest)
    dropped += capped
    if dropped or gone:
        db.execute("PRAGMA incremental_vacuum")  # a no-op on databases made before auto_vacuum
    return Pruned(
        requests=dropped, chunks=freed, size_before=before, size_after=used_bytes(db), tunnels=gone
    )


def used_bytes(db: sqlite3.Connection) -> int:
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    free = db.execute("PRAGMA freelist_count").fetchone()[0]
    size: int = db.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


def _drop_through(db: sqlite3.Connection, last: int) -> int:
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute("SELECT record_hash FROM requests WHERE id=?", (last,)).fetchone()
        cur = db.execute("DELETE FROM requests WHERE id <= ?", (last,))
        if row is not None:
            chain.set_anchor(db, last, row[0])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return cur.rowcount
