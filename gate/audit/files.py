"""The audit database file: opening it owner-only and tuned, moving a corrupt one aside,
and telling the user what to do when a write fails."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path

from gate.config import AuditSettings


def connect(path: Path, settings: AuditSettings, background: bool) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit). With a background pass
    (`background`), the WAL is checkpointed there, not by whichever request commits."""
    if not path.exists():
        os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
    _private(path)
    db = sqlite3.connect(
        path, timeout=settings.lock_timeout_ms / 1000, isolation_level=None, check_same_thread=False
    )
    db.row_factory = sqlite3.Row
    try:
        _configure(db, background)
    except BaseException:
        db.close()
        raise
    for suffix in ("-wal", "-shm"):  # SQLite gives them the database's mode; make sure
        side = Path(f"{path}{suffix}")
        if side.exists():
            _private(side)
    return db


def _private(path: Path) -> None:
    """0600, changed only when it is not (a read-only file then fails at its first write,
    with a message that says so, not here)."""
    if path.stat().st_mode & 0o777 != 0o600:
        os.chmod(path, 0o600)


def _configure(db: sqlite3.Connection, background: bool) -> None:
    if db.execute("PRAGMA page_count").fetchone()[0] == 0:
        # Only settable before the first table: lets pruning hand pages back to the disk.
        db.execute("PRAGMA auto_vacuum=INCREMENTAL")
    db.execute("PRAGMA journal_mode=WAL")
    # Committed rows survive a killed gate (WAL); only a power loss may lose the last
    # ones, a cost paid to keep an fsync off every request.
    db.execute("PRAGMA synchronous=NORMAL")
    if background:
        db.execute("PRAGMA wal_autocheckpoint=0")


def move_aside(path: Path) -> Path:
    """Rename a database that cannot be opened (and its WAL, shm) to
    `<name>.corrupt-<UTC timestamp>`, owner-only, and return the new path."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    moved = path.with_name(f"{path.name}.corrupt-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, f"{moved}{suffix}")
            os.chmod(f"{moved}{suffix}", 0o600)
    return moved


def hint(exc: sqlite3.Error, settings: AuditSettings) -> str:
    """What the user can do about a failed write, by SQLite's error."""
    name = getattr(exc, "sqlite_errorname", "")
    if name == "SQLITE_BUSY" or "locked" in str(exc):
        return (
            f"another process held the audit database longer than audit.lock_timeout_ms"
            f" ({settings.lock_timeout_ms} ms); find it with `fuser` on audit.db"
        )
    if name == "SQLITE_FULL" or name.startswith("SQLITE_IOERR"):
        return (
            "free disk space (a full disk, a file size limit or a failing disk stops"
            " writes), or lower audit.max_size_mb / audit.retention_days"
        )
    if name == "SQLITE_READONLY" or "readonly" in str(exc):
        return "make the data dir and audit.db writable by the user running gate"
    return "see gate's log; `gate audit verify` checks the database"
