"""The background pass over new chunks: pack those stored raw, add each to the full-text
index once (a resent chunk is never indexed again)."""

from __future__ import annotations

import sqlite3

from gate.audit import chunks

_BATCH_BYTES = 1 << 20  # per write transaction: keeps the lock short for the hot path


def index_pending(db: sqlite3.Connection) -> int:
    """Pack and index every chunk not indexed yet; returns how many. Safe to run from two
    processes at once: a chunk is only indexed by the transaction that flips its flag."""
    done = 0
    while True:
        rows = db.execute("SELECT id, codec, data FROM chunks WHERE indexed = 0 ORDER BY id"
                          " LIMIT 256").fetchall()
        if not rows:
            return done
        work: list[tuple[int, bytes | None, str]] = []
        total = 0
        # The slow part (compressing, tokenising input) happens before the lock is taken.
        for cid, codec, data in rows:
            raw = chunks.stored(codec, data)
            packed = chunks.pack(raw) if codec == "raw" else None
            work.append((cid, packed, chunks.text_of(raw)))
            total += len(raw)
            if total >= _BATCH_BYTES:
                break
        db.execute("BEGIN IMMEDIATE")
        try:
            for cid, packed, text in work:
                if packed is None:
                    cur = db.execute("UPDATE chunks SET indexed=1 WHERE id=? AND indexed=0",
                                     (cid,))
                else:
                    cur = db.execute("UPDATE chunks SET data=?, codec='zstd', indexed=1"
                                     " WHERE id=? AND indexed=0", (packed, cid))
                if cur.rowcount:
                    db.execute("INSERT INTO chunk_text (rowid, text) VALUES (?, ?)", (cid, text))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        if any(packed is not None for _, packed, _ in work):
            db.execute("PRAGMA incremental_vacuum")  # hand the raw copies' pages back
        done += len(work)


def forget(db: sqlite3.Connection, cid: int) -> None:
    """Remove one chunk and its index entry (inside the caller's transaction). A contentless
    FTS5 table deletes by being given the text it indexed, so it is rebuilt from the chunk."""
    row = db.execute("SELECT codec, data, indexed FROM chunks WHERE id=?", (cid,)).fetchone()
    if row is None:
        return
    codec, data, indexed = row
    if indexed:
        raw = chunks.stored(codec, data)
        db.execute("INSERT INTO chunk_text (chunk_text, rowid, text) VALUES ('delete', ?, ?)",
                   (cid, chunks.text_of(raw)))
    db.execute("DELETE FROM chunks WHERE id=?", (cid,))
