"""Where chunk bytes live: one block per request holding the chunks it stored first.

A request's new chunks are written together as one block, so one zstd frame is set up per
request (not per chunk: a frame costs tens of µs even for a few bytes) and neighbouring
chunks compress together. A block up to INLINE bytes is compressed on the request's path
(well under a millisecond); a larger one is written raw and packed by the background pass,
after the request has left. A block is deleted when none of its chunks is used any more.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Mapping, Sequence

from gate.audit import chunks

INLINE = 64 << 10


def store(
    db: sqlite3.Connection,
    body: memoryview,
    spans: chunks.Spans,
    hashes: list[bytes],
    known: Mapping[bytes, int],
    have: list[int] | None = None,
) -> tuple[list[int], dict[bytes, int]]:
    """The chunk ids of `body`'s spans, storing the chunks neither `known` (a cache of
    committed ones) nor in the table as one new block. `have` holds the ids of the leading
    spans when they are known (a resent body's, from the previous turn): only the spans
    after them are looked at. Also returns hash → id for every chunk looked up or stored,
    for the caller to cache once its transaction commits."""
    have = have or []
    new_hashes = hashes[len(have) :]
    found: dict[bytes, int] = {}
    missing: dict[bytes, memoryview] = {}
    for digest, (a, b) in zip(new_hashes, spans[len(have) :], strict=True):
        if digest in known or digest in found or digest in missing:
            continue
        row = db.execute("SELECT id FROM chunks WHERE hash=?", (digest,)).fetchone()
        if row is not None:
            found[digest] = int(row[0])
        else:
            missing[digest] = body[a:b]
    if missing:
        block, starts = write(db, list(missing.values()))
        for (digest, piece), start in zip(missing.items(), starts, strict=True):
            found[digest] = int(
                db.execute(
                    "INSERT INTO chunks (hash, block, start, size) VALUES (?,?,?,?) RETURNING id",
                    (digest, block, start, len(piece)),
                ).fetchone()[0]
            )
    return have + [known.get(d) or found[d] for d in new_hashes], found


def write(db: sqlite3.Connection, pieces: Sequence[memoryview]) -> tuple[int, list[int]]:
    """Store `pieces` as one block; return its id and each piece's start in it."""
    starts, at = [], 0
    for p in pieces:
        starts.append(at)
        at += len(p)
    data = b"".join(pieces)
    packed = at <= INLINE
    row = db.execute(
        "INSERT INTO blocks (codec, data) VALUES (?, ?) RETURNING id",
        ("zstd" if packed else "raw", chunks.pack(data) if packed else data),
    ).fetchone()
    return int(row[0]), starts


def read(db: sqlite3.Connection, ids: Sequence[int]) -> dict[int, bytes]:
    """The bytes of these chunks (each block read and unpacked once)."""
    want = sorted(set(ids))
    where: dict[int, list[tuple[int, int, int]]] = {}
    for i in range(0, len(want), 500):
        part = want[i : i + 500]
        marks = ",".join("?" * len(part))
        for cid, block, start, size in db.execute(
            f"SELECT id, block, start, size FROM chunks WHERE id IN ({marks})",  # noqa: S608
            part,
        ):
            where.setdefault(block, []).append((cid, start, size))
    out: dict[int, bytes] = {}
    for block, data in _blocks(db, list(where)):
        for cid, start, size in where[block]:
            out[cid] = data[start : start + size]
    return out


def _blocks(db: sqlite3.Connection, ids: list[int]) -> Iterator[tuple[int, bytes]]:
    for bid in ids:
        row = db.execute("SELECT codec, data FROM blocks WHERE id=?", (bid,)).fetchone()
        if row is not None:
            yield bid, chunks.stored(row[0], row[1])


def pack_raw(db: sqlite3.Connection) -> int:
    """Compress the blocks written raw; returns how many. The compressing happens before
    the write lock is taken; the update only applies if the block is still raw."""
    done = 0
    for (bid,) in db.execute("SELECT id FROM blocks WHERE codec='raw'").fetchall():
        row = db.execute("SELECT data FROM blocks WHERE id=? AND codec='raw'", (bid,)).fetchone()
        if row is None:
            continue
        packed = chunks.pack(row[0])
        db.execute(
            "UPDATE blocks SET data=?, codec='zstd' WHERE id=? AND codec='raw'", (packed, bid)
        )
        done += 1
    if done:
        db.execute("PRAGMA incremental_vacuum")  # hand the raw copies' pages back
    return done


def drop_unused(db: sqlite3.Connection, candidates: set[int]) -> None:
    """Delete those of these blocks none of whose chunks remain (in the caller's
    transaction)."""
    db.executemany(
        "DELETE FROM blocks WHERE id=? AND NOT EXISTS"
        " (SELECT 1 FROM chunks WHERE chunks.block = ?)",
        [(b, b) for b in sorted(candidates)],
    )
