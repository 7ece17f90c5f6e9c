"""The audit database's schema: append-only migrations, and the one-time upgrade of rows
written before bodies were chunked and chained."""

from __future__ import annotations

import sqlite3

from gate.audit import chain, chunks

# Append-only: never edit a migration that has shipped; add a new one.
MIGRATIONS = (
    """
    CREATE TABLE requests (
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        run_id TEXT,
        agent TEXT,
        upstream TEXT NOT NULL,
        host TEXT NOT NULL,
        method TEXT NOT NULL,
        path TEXT NOT NULL,
        model TEXT,
        project_root TEXT,
        request_bytes INTEGER NOT NULL,
        verdict TEXT NOT NULL,          -- forwarded | modified | blocked
        withheld TEXT NOT NULL,         -- JSON list: tool, target, rule, where (never content)
        reason TEXT,                    -- why it was blocked
        body BLOB,                      -- zstd of the exact body sent (decoded)
        content_encoding TEXT,
        status INTEGER,
        latency_ms REAL,
        input_tokens INTEGER,
        output_tokens INTEGER,
        cache_read_tokens INTEGER,
        cache_creation_tokens INTEGER,
        error TEXT
    );
    CREATE INDEX requests_ts ON requests(ts);
    """,
    # Large bodies are written raw before sending and compressed just after, off the
    # request's path; body_codec says which a row holds.
    """
    ALTER TABLE requests ADD COLUMN body_codec TEXT NOT NULL DEFAULT 'zstd';
    """,
    # Content-addressed bodies and the hash chain. A body is a list of chunk ids
    # (chunk_refs); each distinct chunk is stored once, compressed, and indexed once for
    # full-text search (contentless FTS5 without positions: the index holds which
    # chunk has which token, not a second copy of the text).
    # Each request row carries the previous row's hash (prev_hash) and its own.
    """
    CREATE TABLE blocks (
        id INTEGER PRIMARY KEY,
        codec TEXT NOT NULL,            -- zstd | raw (raw until the background pass packs it)
        data BLOB NOT NULL              -- the chunks one request stored first, back to back
    );
    CREATE TABLE chunks (
        id INTEGER PRIMARY KEY,
        hash BLOB NOT NULL UNIQUE,      -- sha256 of its bytes
        block INTEGER NOT NULL,         -- its bytes: blocks[block].data[start:start+size]
        start INTEGER NOT NULL,
        size INTEGER NOT NULL,
        indexed INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX blocks_raw ON blocks(id) WHERE codec = 'raw';
    CREATE INDEX chunks_block ON chunks(block);
    CREATE INDEX chunks_pending ON chunks(id) WHERE indexed = 0;
    CREATE VIRTUAL TABLE chunk_text USING fts5(text, content='', detail=none,
                                         tokenize='unicode61');
    CREATE TABLE audit_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    ALTER TABLE requests ADD COLUMN chunk_refs BLOB;
    ALTER TABLE requests ADD COLUMN body_digest BLOB;
    ALTER TABLE requests ADD COLUMN session TEXT;
    ALTER TABLE requests ADD COLUMN prev_hash BLOB;
    ALTER TABLE requests ADD COLUMN record_hash BLOB;
    ALTER TABLE requests ADD COLUMN response_hash BLOB;
    CREATE INDEX requests_session ON requests(session, id);
    """,
    # Forward mode: each connection to a host gate does not screen, tunnelled or refused.
    """
    CREATE TABLE tunnels (
        id INTEGER PRIMARY KEY,
        ts REAL NOT NULL,
        ended REAL,
        host TEXT NOT NULL,
        port INTEGER NOT NULL,
        kind TEXT NOT NULL,             -- tunnel (CONNECT) | http (plain request) | blocked
        agent TEXT,
        run_id TEXT,
        bytes_out INTEGER NOT NULL DEFAULT 0,
        bytes_in INTEGER NOT NULL DEFAULT 0,
        reason TEXT
    );
    CREATE INDEX tunnels_ts ON tunnels(ts);
    """,
    # A shared gate's user who sent each request (null on a gate that serves one person).
    """
    ALTER TABLE requests ADD COLUMN user_name TEXT;
    CREATE INDEX requests_user ON requests(user_name, id);
    """,
)


class NewerSchema(Exception):
    """The database was written by a newer gate: refused, left untouched."""


def migrate(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    current = row[0] or 0
    if current > len(MIGRATIONS):
        raise NewerSchema(
            f"audit.db schema {current} is newer than this gate ({len(MIGRATIONS)}): upgrade gate"
        )
    for version in range(current + 1, len(MIGRATIONS) + 1):
        script = MIGRATIONS[version - 1]  # our own constant SQL, never user input
        db.executescript(
            f"BEGIN; {script}; INSERT INTO schema_version VALUES ({version});"  # noqa: S608
            " COMMIT;"
        )
    if db.execute("SELECT 1 FROM requests WHERE record_hash IS NULL LIMIT 1").fetchone():
        upgrade_legacy(db)


def upgrade_legacy(db: sqlite3.Connection) -> None:
    """Rows from schemas 1-2 hold their body in `body` and no hashes: chunk their bodies and
    chain them, in id order, once. They precede every chained row (new rows are always
    chained), so the chain then starts at the first row as if it had always been there."""
    db.execute("BEGIN IMMEDIATE")
    try:
        prev = chain.GENESIS
        for row in db.execute("SELECT * FROM requests ORDER BY id").fetchall():
            if row["record_hash"] is not None:
                prev = row["record_hash"]
                continue
            fields = dict(row)
            blob = fields["body"]
            if blob is not None:
                blob = chunks.stored(fields["body_codec"], blob)
                ids, hashes = store_chunks(db, blob)
                fields["body_digest"] = chunks.body_digest(hashes)
                fields["chunk_refs"] = chunks.pack_refs(ids)
            fields["prev_hash"] = prev
            fields["record_hash"] = prev = chain.record_hash(fields)
            fields["response_hash"] = chain.response_hash(fields)
            db.execute(
                "UPDATE requests SET body=NULL, chunk_refs=?, body_digest=?, prev_hash=?,"
                " record_hash=?, response_hash=? WHERE id=?",
                (
                    fields.get("chunk_refs"),
                    fields.get("body_digest"),
                    fields["prev_hash"],
                    fields["record_hash"],
                    fields["response_hash"],
                    fields["id"],
                ),
            )
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def store_chunks(db: sqlite3.Connection, body: bytes) -> tuple[list[int], list[bytes]]:
    """Chunk ids and hashes of `body`, storing what is new (the upgrade's slow path)."""
    from gate.audit import blocks

    spans = chunks.split(body)
    view = memoryview(body)
    hashes = [chunks.digest(view[a:b]) for a, b in spans]
    return blocks.store(db, view, spans, hashes, {})[0], hashes
