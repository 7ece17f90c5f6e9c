"""The background pass over new chunks: pack the blocks written raw, add each chunk to the
full-text index once (a resent chunk is never indexed again)."""

from __future__ import annotations

import sqlite3

from gate.audit import blocks, chunks, fulltext

_BATCH = 256  # chunks per write transaction: keeps the lock short for the hot path


def index_pending(db: sqlite3.Connection) -> int:
    """Pack raw blocks, then index every chunk not indexed yet; returns how many chunks.
    Safe from two processes at once: a chunk is indexed by the transaction that flips its
    flag, and a block packed only if it is still raw."""
    blocks.pack_raw(db)
    done = 0
    while True:
        ids = [
            cid
            for (cid,) in db.execute(
                "SELECT id FROM chunks WHERE indexed = 0 ORDER BY id LIMIT ?", (_BATCH,)
            )
        ]
        if not ids:
            return done
        # The slow part (reading, un-escaping) happens before the lock is taken.
        texts = {cid: chunks.text_of(raw) for cid, raw in blocks.read(db, ids).items()}
        db.execute("BEGIN IMMEDIATE")
        try:
            for cid, text in texts.items():
                cur = db.execute("UPDATE chunks SET indexed=1 WHERE id=? AND indexed=0", (cid,))
                if cur.rowcount:
                    fulltext.add(db, cid, text)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        done += len(texts)
        if len(ids) > len(texts):  # rows that vanished meanwhile (pruned): do not spin
            return done


def forget(db: sqlite3.Connection, ids: list[int]) -> None:
    """Remove chunks and their index entries (inside the caller's transaction). A
    contentless FTS5 table deletes by being given the text it indexed, so it is rebuilt
    from the chunk (fulltext.py); blocks left with no chunk are deleted."""
    if not ids:
        return
    rows = db.execute(
        f"SELECT id, block, indexed FROM chunks WHERE id IN ({','.join('?' * len(ids))})",  # noqa: S608
        ids,
    ).fetchall()
    indexed = sorted(cid for cid, _, flag in rows if flag)
    for cid, raw in blocks.read(db, indexed).items():
        fulltext.forget(db, cid, chunks.text_of(raw))
    db.executemany("DELETE FROM chunks WHERE id=?", [(cid,) for cid in ids])
    blocks.drop_unused(db, {block for _, block, _ in rows})
