"""SQLite audit store: every request committed, chunked and chained, before it is sent.

The insert is on the request's hot path: C-speed work per byte (a memcmp against the
session's previous body, whose chunk ids it reuses for the shared prefix (recent.py); a
regex for the cut points and sha256 of what is new), and only the chunks not stored before
written, as one block (blocks.py); a background pass indexes them after the request left.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from loguru import logger

from gate import dirs
from gate.audit import blocks, chain, chunks, files, recent, schema
from gate.audit.engine import engine_for
from gate.audit.records import RequestRow, Response
from gate.audit.report import shown_sql
from gate.audit.worker import Worker
from gate.config import AuditSettings
from gate.errors import GateError

_CACHE_MAX = 200_000  # chunk hash → id entries kept in memory
_CORRUPT = frozenset({"SQLITE_CORRUPT", "SQLITE_NOTADB"})


class AuditError(GateError):
    """The audit cannot be written; the request it was for is not sent."""

    exit_code = 3  # to the CLI: the audit cannot be read or reached


class AuditStore:
    """One connection per thread (WAL); writers serialised by BEGIN IMMEDIATE, which waits
    up to audit.lock_timeout_ms for the lock and then fails (the request is blocked).
    With audit.url (or GATE_AUDIT_URL), the same store on PostgreSQL (engine.py, pg.py):
    pooled connections, and one advisory lock in place of SQLite's write lock."""

    def __init__(
        self,
        path: Path,
        settings: AuditSettings | None = None,
        *,
        background: bool = False,
        reader: bool = False,
    ):
        self.path = path
        # A reader (`gate log`, `gate watch`) never moves a running gate's database aside.
        self._reader = reader
        self.settings = settings or AuditSettings()
        self._local = threading.local()
        self._write = threading.Lock()
        self._known: dict[bytes, int] = {}  # chunk hash → id, for chunks known committed
        self._recent = recent.Recent()  # each session's last body, to reuse
        self._gen = ""  # chunk generation the cache belongs to
        # With a background pass, it checkpoints the WAL: not the request's commit.
        self._background = background
        self.engine = engine_for(path, self.settings)
        self.where = self.engine.where
        if not self.engine.postgres:
            dirs.private_dir(path.parent)
        self._open()
        self.worker: Worker | None = None
        if background:
            self.worker = Worker(self)
            self.worker.start()

    # -- opening -----------------------------------------------------------------------

    def _open(self) -> None:
        if self.engine.postgres:
            self._open_remote()
            return
        try:
            schema.migrate(self.conn())
        except schema.NewerSchema as exc:
            raise AuditError(
                str(exc), where=str(self.path), hint="upgrade gate; the database was left untouched"
            ) from exc
        except sqlite3.DatabaseError as exc:
            if getattr(exc, "sqlite_errorname", "") not in _CORRUPT:
                raise
            if self._reader:
                raise AuditError(
                    f"cannot read the audit: {exc}",
                    where=str(self.path),
                    hint="a gate moves an unreadable audit aside and starts a"
                    " fresh one when it starts",
                ) from exc
            self.close_thread()
            moved = files.move_aside(self.path)
            logger.warning(
                "audit: {} could not be opened ({}); moved it to {} and started a fresh one",
                self.path,
                exc,
                moved,
            )
            schema.migrate(self.conn())

    def _open_remote(self) -> None:
        """Fail closed: a gate that cannot reach or migrate its audit database does not start."""
        try:
            self.engine.migrate(self.conn())
        except schema.NewerSchema as exc:
            self.close_thread()
            raise AuditError(
                str(exc), where=self.where, hint="upgrade gate; the database was left untouched"
            ) from exc
        except self.engine.errors as exc:
            self.close_thread()
            self.engine.close()
            raise AuditError(
                f"cannot open the audit database: {exc}",
                where=self.where,
                hint=self.engine.hint(exc),
            ) from exc

    def conn(self) -> sqlite3.Connection:
        """This thread's connection (autocommit; transactions are explicit). A PostgreSQL
        connection that broke (a restarted server) is replaced by a fresh one."""
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is not None and getattr(db, "broken", False):
            self.close_thread()
            db = None
        if db is None:
            db = self._local.db = self.engine.connect(self._background)
        return db

    def begin(self) -> sqlite3.Connection:
        """This thread's connection, inside a new write transaction. A PostgreSQL
        connection held since before the server restarted is found broken only when used;
        its BEGIN sent nothing, so it is begun once more on a fresh one (a request is not
        refused because another thread saw the restart first)."""
        db = self.conn()
        try:
            db.execute("BEGIN IMMEDIATE")
        except self.engine.errors:
            if not getattr(db, "broken", False):
                raise
            db = self.conn()  # the broken one is replaced
            db.execute("BEGIN IMMEDIATE")
        return db

    def close_thread(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    # -- writing -----------------------------------------------------------------------

    def record_request(self, row: RequestRow) -> int:
        """Commit one request row (and its new chunks) and return its id. Raises AuditError
        when it cannot be written: the caller must then block the request."""
        fields = row.columns(row.ts or time.time(), json.dumps(list(row.withheld)))
        try:
            with self._write:
                return self._insert(fields, row.body)
        except self.engine.errors as exc:
            self.engine.forget_partition_cache()
            # Fail closed: a request whose record is not committed never leaves.
            raise AuditError(
                f"gate could not write the audit record ({exc}); the request was not sent",
                where=self.where,
                hint=self.engine.hint(exc),
            ) from exc

    def _insert(self, fields: dict[str, Any], body: bytes | None) -> int:
        turn, prev, keep = (
            self._recent.split(body, fields.get("session")) if body is not None else (None, None, 0)
        )
        db = self.begin()
        try:
            self._check_generation(db)
            self.engine.before_link(db, fields)
            fresh: dict[bytes, int] = {}
            if turn is not None:
                ids, deltas, fresh = recent.chunk_ids(db, turn, prev, keep, self._known, self._gen)
                fields["chunk_refs"] = chunks.pack(deltas)
                fields["body_digest"] = turn.digest
            fields["id"], fields["prev_hash"] = chain.next_link(db)
            fields["record_hash"] = chain.record_hash(fields)
            fields["response_hash"] = chain.response_hash(fields)
            cols = ", ".join(fields)
            marks = ", ".join("?" for _ in fields)
            db.execute(
                f"INSERT INTO requests ({cols}) VALUES ({marks})",  # noqa: S608 (keys are ours)
                tuple(fields.values()),
            )
            db.execute("COMMIT")
        except BaseException:
            if not getattr(db, "broken", False) and db.in_transaction:
                db.execute("ROLLBACK")
            raise
        # Only now: a rolled-back chunk id must never be reused from the cache.
        if len(self._known) + len(fresh) > _CACHE_MAX:
            self._known.clear()
        self._known.update(fresh)
        if turn is not None:
            turn.committed(ids, deltas, self._gen)
        if self.worker is not None:
            self.worker.wake()
        return int(fields["id"])

    def _check_generation(self, db: sqlite3.Connection) -> None:
        """Pruning deletes chunks (in any process) and bumps the generation: a cache from an
        older generation may name deleted chunks, so it is dropped."""
        row = db.execute("SELECT value FROM audit_state WHERE key='chunk_gen'").fetchone()
        gen = row[0] if row else ""
        if gen != self._gen:
            self._known.clear()
            self._gen = gen

    def record_responses(self, batch: list[tuple[int, Response]]) -> None:
        """Complete several rows in one transaction (the worker's batch); raises, and
        writes none of them, when one cannot be written."""
        db = self.begin()
        try:
            for row_id, response in batch:
                self.record_response(row_id, response)
            db.execute("COMMIT")
        except BaseException:
            if not getattr(db, "broken", False) and db.in_transaction:
                db.execute("ROLLBACK")
            raise

    def record_response(self, row_id: int, response: Response) -> None:
        db = self.conn()
        row = db.execute("SELECT record_hash FROM requests WHERE id=?", (row_id,)).fetchone()
        if row is None:
            return  # pruned meanwhile
        status, usage, error = response.status, response.usage, response.error
        latency_ms = float(response.latency_ms)
        fields = {
            "record_hash": row[0],
            "status": status,
            "latency_ms": latency_ms,
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_creation_tokens": usage.cache_creation_tokens,
            "error": error,
        }
        db.execute(
            "UPDATE requests SET status=?, latency_ms=?, input_tokens=?, output_tokens=?,"
            " cache_read_tokens=?, cache_creation_tokens=?, error=?, response_hash=? WHERE id=?",
            (
                status,
                latency_ms,
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_creation_tokens,
                error,
                chain.response_hash(fields),
                row_id,
            ),
        )

    # -- reading -----------------------------------------------------------------------

    def rows(
        self,
        limit: int = 50,
        *,
        since: float | None = None,
        agent: str | None = None,
        body: bool = True,
        run_id: str | None = None,
        session: str | None = None,
        verdict: str | None = None,
        user: str | None = None,
        before: int | None = None,
        after: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """Newest first. `verdict` is as shown (report.shown_verdict: `failed` included).
        `before`/`after`: only ids below/above it (a page of `limit`: with `after`, the
        `limit` rows just above it)."""
        where = ["ts >= ?"]
        args: list[object] = [since or 0.0]
        for op, bound in (("<", before), (">", after)):
            if bound is not None:
                where.append(f"id {op} ?")
                args.append(bound)
        for column, value in (
            ("agent", agent),
            ("run_id", run_id),
            ("session", session),
            ("user_name", user),
        ):
            if value:
                where.append(f"{column} = ?")
                args.append(value)
        if verdict:
            where.append(f"{shown_sql()} = ?")
            args.append(verdict)
        cur = self.conn().execute(
            f"SELECT * FROM requests WHERE {' AND '.join(where)}"  # noqa: S608 (ours)
            f" ORDER BY id {'ASC' if after is not None else 'DESC'} LIMIT ?",
            (*args, limit),
        )
        found = cur.fetchall()
        for row in reversed(found) if after is not None else found:
            yield self._public(row, body)

    def get(self, row_id: int, body: bool = True) -> dict[str, Any] | None:
        row = self.conn().execute("SELECT * FROM requests WHERE id=?", (row_id,)).fetchone()
        return self._public(row, body) if row else None

    def chunk_ids(self, row_id: int) -> list[int]:
        row = (
            self.conn().execute("SELECT chunk_refs FROM requests WHERE id=?", (row_id,)).fetchone()
        )
        return chunks.unpack_refs(row[0]) if row and row[0] is not None else []

    def chunk_data(self, ids: list[int]) -> dict[int, bytes]:
        """The raw bytes of these chunks."""
        return blocks.read(self.conn(), ids)

    def body_of(self, row_id: int) -> bytes | None:
        """The body exactly as sent, from its chunks (None: no body was recorded)."""
        row = (
            self.conn()
            .execute("SELECT chunk_refs, body, body_codec FROM requests WHERE id=?", (row_id,))
            .fetchone()
        )
        if row is None or (row[0] is None and row[1] is None):
            return None
        if row[0] is None:  # a schema-2 row not upgraded (a read-only copy)
            return chunks.stored(row[2], row[1])
        ids = chunks.unpack_refs(row[0])
        data = self.chunk_data(ids)
        return b"".join(data[i] for i in ids)

    def previous_in_session(self, row_id: int) -> int | None:
        row = (
            self.conn()
            .execute(
                "SELECT p.id FROM requests r JOIN requests p ON p.session = r.session"
                " AND p.id < r.id AND p.chunk_refs IS NOT NULL WHERE r.id=?"
                " ORDER BY p.id DESC LIMIT 1",
                (row_id,),
            )
            .fetchone()
        )
        return int(row[0]) if row else None

    def _public(self, row: sqlite3.Row, with_body: bool) -> dict[str, Any]:
        out = dict(row)
        out["withheld"] = json.loads(out["withheld"])
        for key in (
            "body",
            "body_codec",
            "chunk_refs",
            "body_digest",
            "prev_hash",
            "response_hash",
            "day",
        ):
            out.pop(key, None)
        out["record_hash"] = out["record_hash"].hex() if out["record_hash"] else None
        if with_body:
            blob = self.body_of(out["id"])
            out["body"] = blob.decode("utf-8", "replace") if blob is not None else None
        return out

    def close(self) -> None:
        """Finish the background pass, then close this thread's connection."""
        if self.worker is not None:
            self.worker.stop()
            self.worker = None
        self.close_thread()
        self.engine.close()
