"""Each recent session's last body, with what the next turn, which resends it, can reuse:
its spans, chunk hashes and the sha256 states of its body digest (pure functions of its
bytes) and, once its row is committed, its chunk ids and their delta coding (facts about
the database, so they carry the chunk generation they are valid in)."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gate.audit import blocks, chunks

if TYPE_CHECKING:
    from _hashlib import HASH

SESSIONS, BYTES = 64, 64 << 20  # bodies kept: at most this many, this many bytes in all


@dataclass(slots=True, kw_only=True)
class Turn:
    body: bytes
    spans: chunks.Spans
    hashes: list[bytes]
    digest: bytes  # chunks.body_digest(hashes)
    marks: list[HASH] = field(default_factory=list)  # see chunks.resumed_digest
    # Set only after the row's COMMIT: ids from a rolled-back transaction may be handed
    # out again to other chunks, so they are never reused.
    ids: list[int] | None = None
    deltas: bytes = b""  # chunks.deltas(ids)
    gen: str = ""  # the chunk generation `ids` were committed in

    def committed(self, ids: list[int], deltas: bytes, gen: str) -> None:
        self.ids, self.deltas, self.gen = ids, deltas, gen

    def ids_for(self, keep: int, gen: str) -> tuple[list[int], bytes]:
        """The ids of the first `keep` chunks and their deltas, if still valid in `gen`:
        pruning deletes chunks and changes the generation in the same transaction, so
        while it is unchanged every committed id still names its chunk."""
        if self.ids is None or gen != self.gen:
            return [], b""
        return self.ids[:keep], self.deltas[: 8 * keep]


class Recent:
    """The last turn of each of the most recent sessions, newest last. Not thread-safe:
    the store uses it under its write lock."""

    def __init__(self, sessions: int = SESSIONS, budget: int = BYTES):
        self._turns: dict[str, Turn] = {}
        self._sessions, self._budget, self._bytes = sessions, budget, 0

    def split(self, body: bytes, session: str | None) -> tuple[Turn, Turn | None, int]:
        """`body` as a Turn, remembered as `session`'s last; also the turn it replaced and
        how many of its leading spans the two share (their ids are the old turn's)."""
        prev = self._turns.pop(session, None) if session else None
        if prev is not None:
            self._bytes -= len(prev.body)
        spans, hashes, keep = chunks.resplit(
            body, (prev.body, prev.spans, prev.hashes) if prev is not None else None
        )
        digest, marks = chunks.resumed_digest(hashes, prev.marks if prev else [], keep)
        turn = Turn(body=body, spans=spans, hashes=hashes, digest=digest, marks=marks)
        if session:
            self._turns[session] = turn
            self._bytes += len(body)
            while len(self._turns) > self._sessions or self._bytes > self._budget:
                self._bytes -= len(self._turns.pop(next(iter(self._turns))).body)
        return turn, prev, keep


def chunk_ids(
    db: sqlite3.Connection,
    turn: Turn,
    prev: Turn | None,
    keep: int,
    known: Mapping[bytes, int],
    gen: str,
) -> tuple[list[int], bytes, dict[bytes, int]]:
    """`turn`'s chunk ids and their deltas (storing its new chunks, in the caller's
    transaction), and hash → id of those looked up. The `keep` leading chunks it shares
    with the session's previous turn take that turn's ids and deltas while they are valid
    in `gen`: the work is then what the turn added, not what it resent."""
    have, head = prev.ids_for(keep, gen) if prev is not None else ([], b"")
    ids, fresh = blocks.store(db, memoryview(turn.body), turn.spans, turn.hashes, known, have)
    n = len(have)
    return ids, head + chunks.deltas(ids[n:], ids[n - 1] if n else 0), fresh
