"""The serving gate's background thread: after requests have left, it completes their rows
with the response, packs and indexes their new chunks and checkpoints the WAL (so no
request's commit pays for a checkpoint); it prunes by retention at start and hourly."""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Protocol

from loguru import logger

from gate.audit import index, retention
from gate.audit.connected import Connected
from gate.audit.records import Response

PRUNE_EVERY = 3600.0
IDLE_WAKE = 60.0
# The WAL is copied back into the database by this thread's own commits once it holds
# this many new pages (~8 MB): SQLite counts them (autocheckpoint is per connection; the
# request path's connections never checkpoint). Not by the WAL file's size: the file keeps
# its size after a checkpoint and is reused, so a size test checkpointed on every pass.
WAL_PAGES = 2048


class Tended(Connected, Protocol):
    """The store a worker tends (store.py): it completes rows and closes its connection."""

    def record_response(self, row_id: int, response: Response) -> None: ...

    def close_thread(self) -> None: ...


class Worker(threading.Thread):
    def __init__(self, store: Tended):
        super().__init__(daemon=True, name="gate-audit")
        self.store = store
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._next_prune = 0.0
        self._responses: deque[tuple[int, Response]] = deque()

    def wake(self) -> None:
        self._wake.set()

    def record_response(self, row_id: int, response: Response) -> None:
        """Complete a request's row in the next pass: a response's status, latency and
        usage are bookkeeping, so their write (and any wait for the write lock) happens
        here, off the proxy's event loop. stop() writes what is still queued."""
        self._responses.append((row_id, response))
        self._wake.set()

    def stop(self) -> None:
        """Finish what is pending, then end (called by the store's close)."""
        self._stopping.set()
        self._wake.set()
        self.join(timeout=30)

    def run(self) -> None:
        try:
            self.store.conn().execute(f"PRAGMA wal_autocheckpoint={WAL_PAGES}")
        except Exception as exc:  # the passes log what fails; rows are still committed
            logger.warning("audit: WAL checkpoints not set up ({})", type(exc).__name__)
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
        while self._responses:
            row_id, response = self._responses.popleft()
            try:
                self.store.record_response(row_id, response)
            except Exception as exc:
                logger.error("audit update failed for request {}: {}", row_id, type(exc).__name__)
        try:
            index.index_pending(self.store.conn())
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
            logger.info("audit: pruned {} requests and {} chunks", result.requests, result.chunks)
