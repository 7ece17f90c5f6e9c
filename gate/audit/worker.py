"""The serving gate's background thread: after requests have left, it packs and indexes
their new chunks and checkpoints the WAL (so no request's commit pays for a checkpoint);
it prunes by retention at start and hourly."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

from loguru import logger

from gate.audit import index, retention

if TYPE_CHECKING:
    from gate.audit.store import AuditStore

PRUNE_EVERY = 3600.0
IDLE_WAKE = 60.0
WAL_BYTES = 8 << 20


def checkpoint(db: sqlite3.Connection, path: Path) -> None:
    """Copy the WAL back into the database once it is large. Not after every pass: the
    first commit after a checkpoint restarts the WAL, which costs that request a few ms."""
    try:
        size = os.stat(f"{path}-wal").st_size
    except FileNotFoundError:
        return
    if size > WAL_BYTES:
        db.execute("PRAGMA wal_checkpoint(PASSIVE)")


class Worker(threading.Thread):
    def __init__(self, store: AuditStore):
        super().__init__(daemon=True, name="gate-audit")
        self.store = store
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._next_prune = 0.0

    def wake(self) -> None:
        self._wake.set()

    def stop(self) -> None:
        """Finish what is pending, then end (called by the store's close)."""
        self._stopping.set()
        self._wake.set()
        self.join(timeout=30)

    def run(self) -> None:
        self._wake.set()
        while True:
            self._wake.wait(timeout=IDLE_WAKE)
            self._wake.clear()
            # Read before the pass: a stop asked for during a pass gets one more pass, so
            # what was committed meanwhile is packed too.
            stopping = self._stopping.is_set()
            self._pass()
            if stopping:
                break
        self.store.close_thread()

    def _pass(self) -> None:
        try:
            db = self.store.conn()
            index.index_pending(db)
            checkpoint(db, self.store.path)
        except Exception as exc:  # the chunks stay readable (raw) and are retried next pass
            logger.warning("audit: background pass failed ({}: {})", type(exc).__name__, exc)
        if time.monotonic() < self._next_prune or self._stopping.is_set():
            return
        self._next_prune = time.monotonic() + PRUNE_EVERY
        try:
            result = retention.prune(self.store)
        except Exception as exc:
            logger.warning("audit: pruning failed ({}: {})", type(exc).__name__, exc)
            return
        if result.requests:
            logger.info("audit: pruned {} requests and {} chunks", result.requests,
                        result.chunks)
