"""The audit's PostgreSQL schema: append-only migrations, the daily partitions of
`requests`, and retention by dropping whole partitions.

Requests are partitioned by day (UTC). Every gate writes under one advisory lock (pg.py)
and a row's partition is never earlier than the row before it (engine.before_link), so ids
and partitions run in the same order, and a partition holds no row younger than its day.
Dropping the oldest partitions then removes a prefix of the one hash chain, whose last row
becomes the anchor the rest verify from, as pruning does on SQLite. Chunks are shared by
every day that resent them, so they stay unpartitioned and go when no remaining request
uses them.
"""

from __future__ import annotations

import datetime as dt
import time
from typing import Any, cast

from gate.audit import chain, schema, tunnels
from gate.audit.connected import Connected
from gate.audit.garbage import Pruned, collect_garbage
from gate.audit.pg import Connection

DAY = 86400
PREFIX = "requests_d"

# Append-only: never edit a migration that has shipped; add a new one.
MIGRATIONS = (
    # The SQLite schema's columns in SQLite's order (so `SELECT *` reads the same), bodies
    # as chunks in blocks; the full-text index holds each chunk's words, not its text.
    # date(), total() and sum(boolean) are SQLite's, so report queries run unchanged.
    """
    CREATE TABLE requests (
        id BIGINT NOT NULL,
        ts DOUBLE PRECISION NOT NULL,
        run_id TEXT, agent TEXT, upstream TEXT NOT NULL, host TEXT NOT NULL,
        method TEXT NOT NULL, path TEXT NOT NULL, model TEXT, project_root TEXT,
        request_bytes BIGINT NOT NULL, verdict TEXT NOT NULL, withheld TEXT NOT NULL,
        reason TEXT, body BYTEA, content_encoding TEXT, status BIGINT,
        latency_ms DOUBLE PRECISION, input_tokens BIGINT, output_tokens BIGINT,
        cache_read_tokens BIGINT, cache_creation_tokens BIGINT, error TEXT,
        body_codec TEXT NOT NULL DEFAULT 'zstd', chunk_refs BYTEA, body_digest BYTEA,
        session TEXT, prev_hash BYTEA, record_hash BYTEA, response_hash BYTEA,
        day BIGINT NOT NULL              -- the partition: see engine.before_link
    ) PARTITION BY RANGE (day);
    CREATE INDEX requests_id ON requests (id);
    CREATE INDEX requests_ts ON requests (ts);
    CREATE INDEX requests_session ON requests (session, id);
    CREATE TABLE blocks (id BIGSERIAL PRIMARY KEY, codec TEXT NOT NULL, data BYTEA NOT NULL);
    -- zstd already: stored as is, not compressed again
    ALTER TABLE blocks ALTER COLUMN data SET STORAGE EXTERNAL;
    CREATE TABLE chunks (
        id BIGSERIAL PRIMARY KEY, hash BYTEA NOT NULL UNIQUE, block BIGINT NOT NULL,
        start BIGINT NOT NULL, size BIGINT NOT NULL, indexed INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX blocks_raw ON blocks (id) WHERE codec = 'raw';
    CREATE INDEX chunks_block ON chunks (block);
    CREATE INDEX chunks_pending ON chunks (id) WHERE indexed = 0;
    CREATE TABLE chunk_text (rowid BIGINT PRIMARY KEY, words TSVECTOR);
    CREATE INDEX chunk_text_words ON chunk_text USING gin (words);
    CREATE TABLE audit_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE FUNCTION date(double precision, text, text) RETURNS text LANGUAGE sql STABLE
        AS $$ SELECT to_char(to_timestamp($1), 'YYYY-MM-DD') $$;
    CREATE FUNCTION gate_total(double precision, double precision)
        RETURNS double precision LANGUAGE sql IMMUTABLE AS $$ SELECT $1 + coalesce($2, 0) $$;
    CREATE AGGREGATE total(double precision)
        (sfunc = gate_total, stype = double precision, initcond = '0');
    CREATE FUNCTION gate_count(bigint, boolean) RETURNS bigint LANGUAGE sql IMMUTABLE
        AS $$ SELECT $1 + CASE WHEN $2 THEN 1 ELSE 0 END $$;
    CREATE AGGREGATE sum(boolean) (sfunc = gate_count, stype = bigint, initcond = '0');
    """,
    # Forward mode: each connection to a host gate does not screen, tunnelled or refused
    # (SQLite's schema 5, same columns in the same order).
    """
    CREATE TABLE tunnels (
        id BIGSERIAL PRIMARY KEY, ts DOUBLE PRECISION NOT NULL, ended DOUBLE PRECISION,
        host TEXT NOT NULL, port BIGINT NOT NULL, kind TEXT NOT NULL, agent TEXT,
        run_id TEXT, bytes_out BIGINT NOT NULL DEFAULT 0, bytes_in BIGINT NOT NULL DEFAULT 0,
        reason TEXT
    );
    CREATE INDEX tunnels_ts ON tunnels (ts);
    """,
    # A shared gate's user who sent each request (null on a gate that serves one person).
    """
    ALTER TABLE requests ADD COLUMN user_name TEXT;
    CREATE INDEX requests_user ON requests (user_name, id);
    """,
)


def migrate(db: Connection) -> None:
    """Bring the schema up to date under the write lock (two gates starting at once do it
    once); a newer schema is refused untouched."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
        current = db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0
        if current > len(MIGRATIONS):
            raise schema.NewerSchema(
                f"audit schema {current} is newer than this gate ({len(MIGRATIONS)}): upgrade gate"
            )
        for version in range(current + 1, len(MIGRATIONS) + 1):
            db.raw.execute(MIGRATIONS[version - 1])  # our own constant SQL
            db.execute("INSERT INTO schema_version VALUES (?)", (version,))
        db.execute("COMMIT")
    except BaseException:
        if not db.broken and db.in_transaction:
            db.execute("ROLLBACK")
        raise


def day_of(ts: float) -> int:
    return int(ts // DAY)


def partition_name(day: int) -> str:
    return PREFIX + dt.datetime.fromtimestamp(day * DAY, dt.UTC).strftime("%Y%m%d")


def ensure_partition(db: Connection, day: int) -> None:
    """The partition for `day`, created if missing (inside the writer's transaction, so
    under the write lock: two gates never race to create it)."""
    name = partition_name(day)
    db.raw.execute(
        f"CREATE TABLE IF NOT EXISTS {name} PARTITION OF requests"
        f" FOR VALUES FROM ({day}) TO ({day + 1})"
    )


def partitions(db: Connection) -> list[tuple[int, str]]:
    """(day, name) of every partition of requests, oldest first."""
    rows = db.execute(
        "SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid"
        " WHERE i.inhparent = 'requests'::regclass"
    ).fetchall()
    out = []
    for (name,) in rows:
        stamp = dt.datetime.strptime(name[len(PREFIX) :], "%Y%m%d").replace(tzinfo=dt.UTC)
        out.append((int(stamp.timestamp()) // DAY, name))
    return sorted(out)


def used_bytes(db: Connection) -> int:
    """The audit's tables, their indexes and TOAST, on disk."""
    row = db.execute(
        "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
        " WHERE c.relkind = 'r'"
        " AND c.relnamespace = (SELECT relnamespace FROM pg_class WHERE oid = 'requests'::regclass)"
        " AND (c.relname LIKE 'requests_d%' OR c.relname IN"
        " ('blocks', 'chunks', 'chunk_text', 'audit_state', 'schema_version', 'tunnels'))"
    ).fetchone()
    return int(row[0])


def prune(store: Connected, now: float | None = None) -> Pruned:
    """audit.retention_days, then audit.max_size_mb, by dropping whole days: the oldest
    partitions wholly before the cutoff, then (for the size cap) the oldest ones but today's.
    A dropped day's last row becomes the chain's anchor in the same transaction."""
    db = store.conn()
    assert isinstance(db, Connection)
    settings = store.settings
    before = used_bytes(db)
    cutoff = (time.time() if now is None else now) - settings.retention_days * DAY
    old = [p for p in partitions(db) if (p[0] + 1) * DAY <= cutoff]
    dropped = _drop(db, old)
    freed = collect_garbage(db)
    gone = tunnels.prune(db, cutoff)
    capped = False
    cap = settings.max_size_mb << 20 if settings.max_size_mb else None
    while cap is not None and used_bytes(db) > cap:
        left = partitions(db)
        if len(left) <= 1:
            break
        dropped += _drop(db, left[:1])
        freed += collect_garbage(db)
        capped = True
    if capped:  # none older than the first day kept, as on SQLite
        gone += tunnels.prune(db, partitions(db)[0][0] * DAY)
    return Pruned(
        requests=dropped, chunks=freed, size_before=before, size_after=used_bytes(db), tunnels=gone
    )


def _drop(db: Connection, parts: list[tuple[int, str]]) -> int:
    if not parts:
        return 0
    count = 0
    db.execute("BEGIN IMMEDIATE")
    try:
        for _, name in parts:
            n, last = db.execute(f"SELECT COUNT(*), MAX(id) FROM {name}").fetchone()  # noqa: S608 (ours)
            if last is not None and last > chain.anchor(cast(Any, db))[0]:
                digest = db.execute(
                    f"SELECT record_hash FROM {name} WHERE id = ?",  # noqa: S608
                    (last,),
                ).fetchone()[0]
                chain.set_anchor(cast(Any, db), int(last), bytes(digest))
            db.raw.execute(f"DROP TABLE {name}")
            count += int(n)
        db.execute("COMMIT")
    except BaseException:
        if not db.broken and db.in_transaction:
            db.execute("ROLLBACK")
        raise
    return count
