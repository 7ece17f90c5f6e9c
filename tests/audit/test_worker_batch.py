"""The audit worker completes the responses that arrive while it gathers in one
transaction, and one by one when that transaction fails (only the bad row is lost)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from audit_rows import messages_row

from gate.audit import chain
from gate.audit.records import Disposition, Response, Usage
from gate.audit.store import AuditStore
from gate.audit.worker import Worker
from gate.config import AuditSettings


class _Store:
    """A real store seen through the worker's protocol, counting how rows are completed;
    `bad` is a row whose write fails."""

    def __init__(self, store: AuditStore, bad: int | None = None) -> None:
        self.store, self.bad = store, bad
        self.batches: list[list[int]] = []
        self.single: list[int] = []
        self.gathered = threading.Event()

    @property
    def engine(self) -> object:
        return self.store.engine

    @property
    def settings(self) -> AuditSettings:
        return self.store.settings

    def conn(self) -> sqlite3.Connection:
        return self.store.conn()

    def record_responses(self, batch: list[tuple[int, Response]]) -> None:
        self.batches.append([r for r, _ in batch])
        if self.bad in self.batches[-1]:
            raise sqlite3.OperationalError("disk I/O error")
        self.store.record_responses(batch)

    def record_response(self, row_id: int, response: Response) -> None:
        self.single.append(row_id)
        if row_id == self.bad:
            raise sqlite3.OperationalError("disk I/O error")
        self.store.record_response(row_id, response)

    def close_thread(self) -> None:
        self.store.close_thread()


def _rows(store: AuditStore, n: int) -> list[int]:
    row = messages_row(b"{}", verdict=Disposition.FORWARDED)
    return [store.record_request(row) for _ in range(n)]


def _ok(i: int) -> Response:
    return Response(status=200, latency_ms=float(i), usage=Usage(i, i + 1))


def test_responses_queued_together_are_one_transaction(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "audit.db")
    rows = _rows(store, 5)
    seen = _Store(store)
    worker = Worker(seen, gather=60.0)  # nothing but a stop ends the gathering
    for i, row in enumerate(rows):  # queued before it starts: its first pass takes all
        worker.record_response(row, _ok(i))
    worker.start()
    worker.stop()
    assert seen.batches == [rows] and seen.single == []
    statuses = [store.get(r, body=False)["status"] for r in rows]  # type: ignore[index]
    assert statuses == [200] * 5
    assert store.get(rows[3], body=False)["output_tokens"] == 4  # type: ignore[index]
    assert chain.verify(store.conn()).ok


def test_a_failed_batch_is_written_row_by_row(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "audit.db")
    rows = _rows(store, 4)
    seen = _Store(store, bad=rows[1])
    worker = Worker(seen, gather=60.0)
    for i, row in enumerate(rows):
        worker.record_response(row, _ok(i))
    worker.start()
    worker.stop()
    assert seen.batches == [rows] and seen.single == rows
    statuses = [store.get(r, body=False)["status"] for r in rows]  # type: ignore[index]
    assert statuses == [200, None, 200, 200]  # the batch rolled back; the others written
    assert chain.verify(store.conn()).ok


def test_a_batch_that_fails_midway_writes_none_of_it(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "audit.db")
    rows = _rows(store, 3)
    gone = rows[-1] + 100  # a row pruned meanwhile is skipped, not an error
    store.record_responses([(rows[0], _ok(0)), (gone, _ok(1))])
    assert store.get(rows[0], body=False)["status"] == 200  # type: ignore[index]

    broken = Response(status=1, latency_ms="not a number")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        store.record_responses([(rows[1], _ok(1)), (rows[2], broken)])
    assert store.get(rows[1], body=False)["status"] is None  # rolled back with the bad one
