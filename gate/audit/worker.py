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
# After a pass the worker lets this long (seconds) go by before the next, so the responses
# that complete meanwhile are written in one transaction: under load a wake and a commit
# per response cost the proxy more CPU than the UPDATEs themselves. A response's row is
# completed at most this much later (stop() writes what is queued at once).
GATHER = 0.05


class Tended(Connected, Protocol):
    """The store a worker tends (store.py): it completes rows and closes its connection."""

    def record_response(self, row_id: int, response: Response) -> None: ...

    def record_responses(self, batch: list[tuple[int, Response]]) -> None: ...

    def close_thread(self) -> None: ...


class Worker(threading.Thread):
    def __init__(self, store: Tended, *, gather: float = GATHER):
        super().__init__(daemon=True, name="gate-audit")
        self._gather = gather
        self.store = store
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._next_prune = 0.0
        self._responses: deque[tuple[int, Response]] = deque()

    def wake(self) -> None:
        if not self._wake.is_set():  # every request wakes it: a set costs a lock and a notify
            self._wake.set()

    def record_response(self, row_id: int, response: Response) -> None:
        """Complete a request's row in the next pass: a response's status, latency and
        usage are bookkeeping, so their write (and any wait for the write lock) happens
        here, off the proxy's event loop. stop() writes what is still queued."""
        self._responses.append((row_id, response))
        if not self._wake.is_set():  # set and not yet seen: the next pass takes this one too
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
            self._stopping.wait(self._gather)  # what completes meanwhile is one batch
        self.store.close_thread()

    def _complete(self, batch: list[tuple[int, Response]]) -> None:
        """The rows' responses in one transaction; one by one when it fails, so only the
        row that cannot be written is lost (and logged)."""
        try:
            self.store.record_responses(batch)
            return
        except Exception as exc:
            logger.warning(
                "audit: {} responses written one by one ({})", len(batch), type(exc).__name__
            )
        for row_id, response in batch:
            try:
                self.store.record_response(row_id, response)
            except Exception as exc:
                logger.error("audit update failed for request {}: {}", row_id, type(exc).__name__)

    def _pass(self) -> None:
        batch = []
        while self._responses:
            batch.append(self._responses.popleft())
        if batch:
            self._complete(batch)
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
