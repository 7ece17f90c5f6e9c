"""The audit's PostgreSQL connections: the store's queries, written once for SQLite, run
here through a small dialect seam (placeholders, transaction kinds, rows by index and name).

The seam is deliberately narrow, so a query written for the SQLite store runs unchanged:
- `?` placeholders outside quoted strings become `%s`, and a literal `%` is doubled;
- `BEGIN` (SQLite: a read snapshot) is a REPEATABLE READ transaction, and `BEGIN
  IMMEDIATE` (SQLite: the write lock) a transaction holding one advisory lock that every
  gate writing to the database takes, so writes stay serialised across machines as they
  are across processes on one SQLite file (the hash chain needs one writer at a time);
- a `PRAGMA` (tuning of SQLite's file) does nothing;
- `date(ts, 'unixepoch', 'localtime')`, `TOTAL()` and `SUM(boolean)` are SQL functions the
  schema creates (pg_schema.py), and the session's time zone is this machine's.
What cannot be said in both (full-text search, partitions, sizes) lives in fulltext.py and
pg_schema.py.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg import pq
from psycopg_pool import ConnectionPool

# Every gate writing to one database takes this lock for each write transaction.
WRITE_LOCK = 0x6761_7465_0001  # "gate" 1
_QUOTED = re.compile(r"('(?:[^']|'')*')")
_BEGIN = {
    "BEGIN": "BEGIN ISOLATION LEVEL REPEATABLE READ",
    "BEGIN IMMEDIATE": f"BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK})",
}
Error = psycopg.Error


def translate(sql: str) -> str:
    """A query in the SQLite store's dialect, as psycopg takes it."""
    parts = _QUOTED.split(sql.replace("%", "%%"))
    for i in range(0, len(parts), 2):  # even parts are outside quotes
        parts[i] = parts[i].replace("?", "%s")
    return "".join(parts)


def redacted(url: str) -> str:
    """The URL or key=value DSN without its password, for messages and logs: the user
    info's, a `password=` query parameter's and a DSN's `password=` are all masked."""
    if "://" not in url:  # key=value form: password=secret or password='se cret'
        return _DSN_PASSWORD.sub(r"\1***", url)
    parts = urlsplit(url)
    if parts.password is not None:
        host = parts.hostname or ""
        netloc = f"{parts.username}:***@{host}" + (f":{parts.port}" if parts.port else "")
        parts = parts._replace(netloc=netloc)
    if parts.query:
        parts = parts._replace(query=_QUERY_PASSWORD.sub(r"\1***", parts.query))
    return urlunsplit(parts)


_DSN_PASSWORD = re.compile(r"(\bpassword\s*=\s*)(?:'(?:[^'\\]|\\.)*'|\S+)", re.IGNORECASE)
_QUERY_PASSWORD = re.compile(r"((?:^|&)password=)[^&]*", re.IGNORECASE)


class Row(tuple[Any, ...]):
    """A row readable by position and by column name, as sqlite3.Row is."""

    names: tuple[str, ...] = ()

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return super().__getitem__(self.names.index(key))
        return super().__getitem__(key)

    def keys(self) -> tuple[str, ...]:
        return self.names


def _rows(cursor: psycopg.Cursor[Any]) -> Any:
    names = tuple(c.name for c in cursor.description or ())
    cls = type("Row", (Row,), {"names": names, "__slots__": ()})
    return lambda values: cls(values)


class Cursor:
    """The part of sqlite3.Cursor the store uses."""

    def __init__(self, cur: psycopg.Cursor[Any] | None):
        self._cur = cur
        self.rowcount = cur.rowcount if cur is not None else 0

    def fetchone(self) -> Any:
        return self._cur.fetchone() if self._cur is not None and self._cur.description else None

    def fetchall(self) -> list[Any]:
        return self._cur.fetchall() if self._cur is not None and self._cur.description else []

    def __iter__(self) -> Iterator[Any]:
        return iter(self.fetchall())


class Connection:
    """One pooled PostgreSQL connection, in autocommit mode (transactions are explicit, as
    the SQLite store writes them)."""

    dialect = "postgresql"

    def __init__(self, pool: ConnectionPool[Any]):
        self._pool = pool
        self._conn: psycopg.Connection[Any] | None = pool.getconn()

    @property
    def raw(self) -> psycopg.Connection[Any]:
        if self._conn is None:
            raise psycopg.InterfaceError("the audit connection was closed")
        return self._conn

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != pq.TransactionStatus.IDLE

    def execute(self, sql: str, args: Sequence[Any] = ()) -> Cursor:
        head = sql.strip().rstrip(";").upper()
        if head.startswith("PRAGMA"):
            return Cursor(None)
        if head in _BEGIN:
            self.raw.execute(_BEGIN[head])
            return Cursor(None)
        cur = self.raw.cursor(row_factory=_rows)
        cur.execute(translate(sql), tuple(args))
        return Cursor(cur)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        with self.raw.cursor() as cur:
            cur.executemany(translate(sql), list(rows))

    def close(self) -> None:
        """Hand the connection back; a broken one, or one left inside a transaction, is
        discarded by the pool."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            if not conn.broken and conn.info.transaction_status != pq.TransactionStatus.IDLE:
                conn.rollback()
            self._pool.putconn(conn)

    @property
    def broken(self) -> bool:
        return self._conn is None or self._conn.broken


def local_zone() -> str:
    """This machine's time zone name for the session (report days are local days, as on
    SQLite), from TZ or /etc/localtime; UTC when neither names one."""
    if tz := os.environ.get("TZ", "").lstrip(":"):
        return tz
    try:
        target = str(Path("/etc/localtime").resolve())
    except OSError:
        return "UTC"
    return target.split("zoneinfo/", 1)[1] if "zoneinfo/" in target else "UTC"


def pool(url: str, size: int, timeout_s: float) -> ConnectionPool[Any]:
    """A pool of autocommit connections, each checked before it is handed out (a database
    restarted meanwhile costs a reconnect, not a failed request). A write that waits longer
    than `timeout_s` for the write lock fails, as on SQLite (audit.lock_timeout_ms).

    A failed connect is retried for `timeout_s` only, then the next write starts again at
    once: the pool's own retries double their wait for up to 5 minutes, so a database back
    after a minute's outage was not tried again for up to another minute, and every request
    meanwhile was refused."""

    def configure(conn: psycopg.Connection[Any]) -> None:
        conn.autocommit = True
        conn.execute(
            "SELECT set_config('TimeZone', %s, false), set_config('lock_timeout', %s, false)",
            (local_zone(), f"{int(timeout_s * 1000)}ms"),
        )

    return ConnectionPool(
        url,
        min_size=0,
        max_size=size,
        timeout=timeout_s,
        open=True,
        configure=configure,
        check=ConnectionPool.check_connection,
        reconnect_timeout=timeout_s,
        kwargs={"connect_timeout": max(1, int(timeout_s)), "application_name": "gate"},
    )
