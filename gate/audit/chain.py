"""The audit's hash chain: each request row carries the previous row's hash, so an edited,
deleted or reordered row breaks a link that `gate audit verify` names.

What the hashes cover:
- record_hash: the request as written before it was sent (every metadata column, the
  withheld list as stored, and `body_digest`, a hash over the body's chunk hashes) plus
  `prev_hash`. This is the chain proper; it is fixed at insert, before the request leaves.
- response_hash: record_hash plus what is learnt afterwards (status, latency, tokens,
  error), rewritten when the response is recorded. It is not chained (responses finish out
  of order) but it is bound to its own record, so editing a status or a token count shows.
- chunk hashes: each chunk's id is the sha256 of its bytes, checked on verify.

Pruning removes a prefix of the chain and keeps, in `audit_state`, the id and hash of the
last row removed (the anchor), so the remaining rows still verify from their first link.
Anyone who can write the data dir can rebuild a whole chain; `verify` prints the head hash
so it can be written down elsewhere and compared later.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

GENESIS = bytes(32)
_RECORD = (
    "id",
    "ts",
    "run_id",
    "session",
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
    "content_encoding",
)
_RESPONSE = (
    "status",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "error",
)


def record_hash(fields: Mapping[str, Any]) -> bytes:
    digest = fields.get("body_digest")
    canon = [fields.get(k) for k in _RECORD] + [digest.hex() if digest else None]
    # Columns added later are hashed only when set, so rows written before them (and rows
    # that leave them empty) keep the hash they were written with.
    canon += [["user_name", fields["user_name"]]] if fields.get("user_name") is not None else []
    return _hash(fields["prev_hash"], canon)


def response_hash(fields: Mapping[str, Any]) -> bytes:
    return _hash(fields["record_hash"], [fields.get(k) for k in _RESPONSE])


def _hash(prefix: bytes, values: list[Any]) -> bytes:
    text = json.dumps(values, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(prefix + text.encode()).digest()


def anchor(db: sqlite3.Connection) -> tuple[int, bytes]:
    """The id and hash the first remaining row links to (0 and GENESIS before any prune)."""
    row = db.execute("SELECT value FROM audit_state WHERE key='anchor'").fetchone()
    if row is None:
        return 0, GENESIS
    data = json.loads(row[0])
    return int(data["id"]), bytes.fromhex(data["hash"])


def next_link(db: sqlite3.Connection) -> tuple[int, bytes]:
    """The id and `prev_hash` of the row about to be written (inside its transaction)."""
    last = db.execute("SELECT id, record_hash FROM requests ORDER BY id DESC LIMIT 1").fetchone()
    anchor_id, anchor_hash = anchor(db)
    if last is not None and last[0] > anchor_id:
        return int(last[0]) + 1, last[1]
    return anchor_id + 1, anchor_hash


def set_anchor(db: sqlite3.Connection, row_id: int, digest: bytes) -> None:
    db.execute(
        "INSERT INTO audit_state (key, value) VALUES ('anchor', ?)"
        " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (json.dumps({"id": row_id, "hash": digest.hex()}),),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Verdict:
    ok: bool
    requests: int
    chunks: int
    head: str | None  # the last record hash (hex), to keep elsewhere
    broken_id: int | None = None
    problem: str | None = None


def verify(db: sqlite3.Connection) -> Verdict:
    """Walk every row in id order; the first broken or missing link is reported. One read
    transaction: a gate writing meanwhile cannot make a new row look like a broken one."""
    db.execute("BEGIN")
    try:
        return _verify(db)
    finally:
        db.execute("COMMIT")


def _verify(db: sqlite3.Connection) -> Verdict:
    from gate.audit import chunks

    hashes: dict[int, bytes] = {}
    for bid, codec, data in db.execute("SELECT id, codec, data FROM blocks"):
        raw = chunks.stored(codec, data)
        for cid, digest, start, size in db.execute(
            "SELECT id, hash, start, size FROM chunks WHERE block=?", (bid,)
        ):
            if chunks.digest(raw[start : start + size]) != digest:
                return Verdict(
                    ok=False,
                    requests=0,
                    chunks=len(hashes),
                    head=None,
                    broken_id=None,
                    problem=f"chunk {cid} does not match its hash: its bytes were edited",
                )
            hashes[cid] = digest
    n_chunks = len(hashes)
    last_id, prev = anchor(db)
    count = 0
    for row in db.execute("SELECT * FROM requests ORDER BY id"):
        fields = dict(row)
        rid = fields["id"]
        if rid != last_id + 1:
            gap = f"{last_id + 1}" if rid == last_id + 2 else f"{last_id + 1}-{rid - 1}"
            return Verdict(
                ok=False,
                requests=count,
                chunks=n_chunks,
                head=None,
                broken_id=rid,
                problem=f"request {gap} missing: request {rid} is not linked to request {last_id}",
            )
        problem = _check_row(fields, prev, hashes)
        if problem:
            return Verdict(
                ok=False,
                requests=count,
                chunks=n_chunks,
                head=None,
                broken_id=rid,
                problem=f"request {rid}: {problem}",
            )
        prev, last_id = fields["record_hash"], rid
        count += 1
    return Verdict(ok=True, requests=count, chunks=n_chunks, head=prev.hex() if count else None)


def _check_row(fields: dict[str, Any], prev: bytes, hashes: dict[int, bytes]) -> str | None:
    from gate.audit import chunks

    if fields["prev_hash"] != prev:
        return "its link to the previous request does not match (a row was edited or removed)"
    refs = fields["chunk_refs"]
    if refs is not None:
        ids = chunks.unpack_refs(refs)
        missing = [i for i in ids if i not in hashes]
        if missing:
            return f"its body refers to chunk {missing[0]}, which is missing"
        if chunks.body_digest([hashes[i] for i in ids]) != fields["body_digest"]:
            return "its body does not match the digest recorded when it was sent"
    if record_hash(fields) != fields["record_hash"]:
        return "its recorded fields were edited after it was written"
    if response_hash(fields) != fields["response_hash"]:
        return "its response fields (status, latency, tokens, error) were edited"
    return None
