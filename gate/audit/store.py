"""SQLite audit store: append-only migrations, one row per request, written before sending."""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import zstandard

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
)


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
        with self._conn() as db:
            _migrate(db)

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
        # zstd level 3: ~7 ms for 2 MB against ~60 ms for zlib level 6, on the send path.
        if body is not None:
            fields["body"] = zstandard.ZstdCompressor(level=3).compress(body)
        fields["withheld"] = json.dumps(fields.get("withheld") or [])
        fields.setdefault("ts", time.time())
        cols = ", ".join(fields)
        marks = ", ".join("?" for _ in fields)
        cur = self._conn().execute(
            f"INSERT INTO requests ({cols}) VALUES ({marks})",  # noqa: S608 (keys are ours)
            tuple(fields.values()),
        )
        assert cur.lastrowid is not None
        return cur.lastrowid

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
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


def _public(row: sqlite3.Row) -> dict[str, Any]:
    out = dict(row)
    out["withheld"] = json.loads(out["withheld"])
    blob = out.pop("body")
    out["body"] = (zstandard.ZstdDecompressor().decompress(blob).decode("utf-8", "replace")
                   if blob is not None else None)
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
