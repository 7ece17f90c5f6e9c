"""What a prune removed, and the chunks no request uses any more, which both databases'
retention deletes last."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass

from gate.audit import chunks, index


@dataclass(frozen=True, slots=True, kw_only=True)
class Pruned:
    requests: int
    chunks: int
    size_before: int
    size_after: int
    tunnels: int = 0  # forward mode's connection rows, pruned by the same age


def collect_garbage(db: sqlite3.Connection) -> int:
    """Delete chunks no request refers to. The live set is read from a snapshot, without
    blocking writers; requests committed since are added under the write lock, so a chunk a
    new request reused is never deleted."""
    db.execute("BEGIN")
    try:
        top = db.execute("SELECT COALESCE(MAX(id), 0) FROM requests").fetchone()[0]
        live = _refs(db, "SELECT chunk_refs FROM requests WHERE chunk_refs IS NOT NULL")
        dead = {cid for (cid,) in db.execute("SELECT id FROM chunks")} - live
    finally:
        db.execute("COMMIT")
    if not dead:
        return 0
    db.execute("BEGIN IMMEDIATE")
    try:
        dead -= _refs(
            db, "SELECT chunk_refs FROM requests WHERE id > ? AND chunk_refs IS NOT NULL", (top,)
        )
        doomed = sorted(dead)
        for i in range(0, len(doomed), 500):
            index.forget(db, doomed[i : i + 500])
        # Other stores' hash → id caches may name what was just deleted: they drop them.
        db.execute(
            "INSERT INTO audit_state (key, value) VALUES ('chunk_gen', ?)"
            " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            (os.urandom(8).hex(),),
        )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    return len(dead)


def _refs(db: sqlite3.Connection, sql: str, args: tuple[int, ...] = ()) -> set[int]:
    out: set[int] = set()
    for (blob,) in db.execute(sql, args):
        out.update(chunks.unpack_refs(blob))
    return out
