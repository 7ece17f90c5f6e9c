"""Reading an agent's SQLite store without disturbing it, and the tables worth reading.

A WAL database is read through `mode=ro`: WAL readers never block its writer. A
rollback-journal database is opened `immutable=1` (no locks at all) when no process has it
open; when one does, a snapshot copy is read instead, so no reader lock can make the
agent's next write fail.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from gate.history.holders import holders

_FTS = ("fts3", "fts4", "fts5")
_SHADOW = (
    "_data",
    "_idx",
    "_content",
    "_docsize",
    "_config",
    "_segments",
    "_segdir",
    "_stat",
    "_docsize",
)


@dataclass(frozen=True, slots=True)
class Table:
    name: str
    columns: tuple[str, ...]
    rowid: bool  # has a rowid (not WITHOUT ROWID, not a view)
    fts: bool  # a full-text index (its text is a copy of other rows)

    def select(self) -> str:
        cols = ", ".join(_quote(c) for c in self.columns)
        return f"SELECT {'rowid, ' if self.rowid else ''}{cols} FROM {_quote(self.name)}"  # noqa: S608


def is_wal(path: Path) -> bool:
    """The header's read/write version bytes say 2 for WAL."""
    head = _header(path)
    return len(head) == 20 and head[18] == 2


def _header(path: Path) -> bytes:
    with open(path, "rb") as f:
        head = f.read(20)
    if not head.startswith(b"SQLite format 3\x00"):
        raise sqlite3.DatabaseError(f"{path} is not an SQLite database")
    return head


@contextmanager
def open_ro(path: Path) -> Iterator[sqlite3.Connection]:
    """A connection that never writes, never blocks the agent, and creates no file (a
    read-only connection to a WAL database would create its -wal and -shm)."""
    uri = path.resolve().as_uri()
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    if is_wal(path) and wal.exists() and shm.exists():
        with _connect(f"{uri}?mode=ro") as db:
            yield db
    elif not wal.exists() and not holders([path]):
        with _connect(f"{uri}?immutable=1") as db:  # nothing else has it: no locks
            yield db
    else:
        # Held with a rollback journal (a reader lock could fail its next write), or a WAL
        # without its index: read a snapshot copy instead.
        with tempfile.TemporaryDirectory(prefix="gate-history-") as tmp:
            copy = Path(tmp) / "snapshot.db"
            shutil.copyfile(path, copy)
            if wal.exists():
                shutil.copyfile(wal, Path(f"{copy}-wal"))
            with _connect(str(copy)) as db:
                yield db


@contextmanager
def _connect(target: str) -> Iterator[sqlite3.Connection]:
    db = sqlite3.connect(target, uri=target.startswith("file:"), timeout=2.0)
    try:
        yield db
    finally:
        db.close()


def tables(db: sqlite3.Connection, with_fts: bool) -> list[Table]:
    """Ordinary tables (and full-text tables, when asked), never FTS shadow tables: their
    text is the FTS table's, read through it."""
    rows = db.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table'"
        " AND name NOT LIKE 'sqlite_%' ORDER BY rootpage"
    ).fetchall()
    fts_names = [n for n, sql in rows if _is_fts(sql)]
    out = []
    for name, sql in rows:
        fts = name in fts_names
        if any(name.startswith(f) and name[len(f) :] in _SHADOW for f in fts_names):
            continue
        if sql and sql.upper().startswith("CREATE VIRTUAL") and not fts:
            continue
        if fts and not with_fts:
            continue
        cols = tuple(
            r[1] for r in db.execute(f"PRAGMA table_xinfo({_quote(name)})") if r[6] in (0, 2, 3)
        )
        without_rowid = bool(sql) and "WITHOUT ROWID" in sql.upper()
        out.append(Table(name, cols, not without_rowid, fts))
    return out


def _is_fts(sql: str | None) -> bool:
    head = (sql or "").lower().replace(" ", "")
    return head.startswith("createvirtualtable") and any(f"using{f}" in head for f in _FTS)


def text_of(value: object) -> str | None:
    """A column value as text: strings, and blobs that are UTF-8 (JSON kept as BLOB)."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return None
    return None


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'
