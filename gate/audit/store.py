"""SQLite audit store: append-only migrations, one row per request, written before sending."""

from __future__ import annotations

import json
import os
import queue
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard
from loguru import logger

from gate import dirs

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
)
# Bodies up to this size are compressed inline (well under a millisecond).
INLINE_COMPRESS = 64 << 10


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None


class AuditStore:
    """One connection per thread; writes serialised by SQLite (WAL, busy timeout)."""

    def __init__(self, path: Path):
        self.path = path
        dirs.private_dir(path.parent)
        if not path.exists():
            path.touch(mode=0o600)
        os.chmod(path, 0o600)
        self._local = threading.local()
        self._pending: queue.Queue[int | None] = queue.Queue()
        self._compactor: threading.Thread | None = None
        with self._conn() as db:
            _migrate(db)
            for (row_id,) in db.execute("SELECT id FROM requests WHERE body_codec='raw'"):
                self._compress_later(row_id)  # left raw by a gate that was killed

    def _conn(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=5.0, isolation_level=None)
            db.row_factory = sqlite3.Row
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
            for suffix in ("-wal", "-shm"):
                side = Path(f"{self.path}{suffix}")
                if side.exists():
                    os.chmod(side, 0o600)
        return db

    def record_request(self, **fields: Any) -> int:
        """Insert one request row; raises if it cannot be written (the caller blocks)."""
        body = fields.pop("body", None)
        raw = body is not None and len(body) > INLINE_COMPRESS
        if body is not None:
            fields["body"] = body if raw else zstandard.ZstdCompressor(level=3).compress(body)
            fields["body_codec"] = "raw" if raw else "zstd"
        fields["withheld"] = json.dumps(fields.get("withheld") or [])
        fields.setdefault("ts", time.time())
        cols = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        cur = self._conn().execute(
            f"INSERT INTO requests ({cols}) VALUES ({marks})",  # noqa: S608 (keys are ours)
            tuple(fields.values()),
        )
        assert cur.lastrowid is not None
        if raw:
            self._compress_later(cur.lastrowid)
        return cur.lastrowid

    def _compress_later(self, row_id: int) -> None:
        if self._compactor is None:
            self._compactor = threading.Thread(target=self._compact, daemon=True,
                                               name="gate-audit-compact")
            self._compactor.start()
        self._pending.put(row_id)

    def _compact(self) -> None:
        db = self._conn()
        while (row_id := self._pending.get()) is not None:
            try:
                row = db.execute("SELECT body FROM requests WHERE id=? AND body_codec='raw'",
                                 (row_id,)).fetchone()
                if row is not None:
                    packed = zstandard.ZstdCompressor(level=3).compress(row[0])
                    db.execute("UPDATE requests SET body=?, body_codec='zstd' WHERE id=?",
                               (packed, row_id))
            except Exception as exc:  # the row stays raw (readable); the next one is tried
                logger.warning("audit: could not compress request {} ({})", row_id,
                               type(exc).__name__)

    def record_response(self, row_id: int, *, status: int | None, latency_ms: float,
                        usage: Usage, error: str | None = None) -> None:
        self._conn().execute(
            "UPDATE requests SET status=?, latency_ms=?, input_tokens=?, output_tokens=?,"
            " cache_read_tokens=?, cache_creation_tokens=?, error=? WHERE id=?",
            (status, latency_ms, usage.input_tokens, usage.output_tokens,
             usage.cache_read_tokens, usage.cache_creation_tokens, error, row_id),
        )

    def rows(self, limit: int = 50) -> Iterator[dict[str, Any]]:
        cur = self._conn().execute(
            "SELECT * FROM requests ORDER BY id DESC LIMIT ?", (limit,))
        for row in cur:
            yield _public(row)

    def get(self, row_id: int) -> dict[str, Any] | None:
        row = self._conn().execute("SELECT * FROM requests WHERE id=?", (row_id,)).fetchone()
        return _public(row) if row else None

    def close(self) -> None:
        """Finish pending compression, then close this thread's connection."""
        if self._compactor is not None:
            self._pending.put(None)
            self._compactor.join(timeout=30)
            self._compactor = None
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


def _public(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    out["withheld"] = json.loads(out["withheld"])
    blob = out.pop("body")
    if blob is not None and out.pop("body_codec") == "zstd":
        blob = zstandard.ZstdDecompressor().decompress(blob)
    out["body"] = blob.decode("utf-8", "replace") if blob is not None else None
    return out


def _migrate(db: sqlite3.Connection) -> None:
    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    current = row[0] or 0
    if current > len(MIGRATIONS):
        raise sqlite3.DatabaseError(
            f"audit.db schema {current} is newer than this gate ({len(MIGRATIONS)}): upgrade gate")
    for version in range(current + 1, len(MIGRATIONS) + 1):
        script = MIGRATIONS[version - 1]  # our own constant SQL, never user input
        db.executescript(f"BEGIN; {script}; INSERT INTO schema_version VALUES ({version});"  # noqa: S608
                         " COMMIT;")
