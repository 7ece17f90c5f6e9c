"""The store: exact bodies back, one copy of a resent conversation, concurrent writers,
old databases, corrupt files, owner-only files."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import zstandard
from audit.session_kit import bodies
from loguru import logger

from gate.audit import chain, index
from gate.audit.records import Disposition, RequestRow, Response, Usage
from gate.audit.store import AuditError, AuditStore

META: dict[str, Any] = {
    "upstream": "anthropic",
    "host": "api.example",
    "method": "POST",
    "path": "/v1/messages",
    "verdict": "forwarded",
}


def record(store: AuditStore, body: bytes | None, **extra: Any) -> int:
    return store.record_request(
        RequestRow(**META, request_bytes=len(body or b""), body=body, **extra)
    )


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(f"{path.name}*"))


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"{}",
        os.urandom(300_000),
        "café ☕ \u2028".encode() * 50_000,
        json.dumps({"messages": [{"role": "user", "content": "x" * 900}] * 300}).encode(),
    ],
)
def test_bodies_come_back_byte_for_byte(tmp_path: Path, body: bytes) -> None:
    store = AuditStore(tmp_path / "audit.db", background=True)
    rid = record(store, body)
    record(store, body)  # the same again: stored once, read back twice
    store.close()  # the background pass has packed the raw chunks by now
    again = AuditStore(tmp_path / "audit.db")
    assert again.body_of(rid) == body and again.body_of(rid + 1) == body
    assert again.conn().execute("SELECT COUNT(*) FROM blocks WHERE codec='raw'").fetchone()[0] == 0
    assert chain.verify(again.conn()).ok


def test_a_request_without_a_body_has_none(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "audit.db")
    rid = record(store, None, reason="blocked", status=403)
    assert store.body_of(rid) is None and store.get(rid)["body"] is None  # type: ignore[index]


def test_a_long_session_is_stored_in_at_most_twice_its_final_request(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    store = AuditStore(path, background=True)
    sent = list(bodies(100))
    for body in sent:
        record(store, body, session="s:1")
    store.close()
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    total, final = disk_bytes(path), len(sent[-1])
    assert total <= 2 * final, (total, final, sum(map(len, sent)))
    assert total * 20 < sum(map(len, sent))
    assert AuditStore(path).body_of(100) == sent[-1]


def test_sixteen_sessions_write_at_once_without_lock_errors(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    AuditStore(path)  # created and migrated once, as `gate serve` does
    errors: list[BaseException] = []
    start = threading.Barrier(16)

    def session(n: int) -> None:
        store = AuditStore(path, background=n == 0)  # a store per writer: a process each
        try:
            start.wait()
            for body in bodies(12, seed=n, result_lines=20):
                rid = record(store, body, session=f"s:{n}")
                store.record_response(rid, Response(status=200, latency_ms=1.0, usage=Usage(5, 6)))
        except BaseException as exc:
            errors.append(exc)
        finally:
            store.close()

    verdicts: list[chain.Verdict] = []
    done = threading.Event()

    def verifier() -> None:  # `gate audit verify` while they write: never a false alarm
        reader = AuditStore(path)
        while not done.is_set():
            verdicts.append(chain.verify(reader.conn()))
        reader.close()

    threads = [threading.Thread(target=session, args=(n,)) for n in range(16)]
    checker = threading.Thread(target=verifier)
    for t in [*threads, checker]:
        t.start()
    for t in threads:
        t.join()
    done.set()
    checker.join()
    assert errors == []
    assert verdicts and all(v.ok for v in verdicts), [v for v in verdicts if not v.ok][:1]
    store = AuditStore(path)
    verdict = chain.verify(store.conn())
    assert verdict.ok and verdict.requests == 16 * 12, verdict
    last = (
        store.conn()
        .execute("SELECT id, session FROM requests WHERE session='s:7' ORDER BY id DESC")
        .fetchone()
    )
    assert store.body_of(last[0]) == list(bodies(12, seed=7, result_lines=20))[-1]


def test_schema_two_rows_are_chunked_chained_and_read_back(tmp_path: Path) -> None:
    from gate.audit.schema import MIGRATIONS

    path = tmp_path / "audit.db"
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for version, script in enumerate(MIGRATIONS[:2], 1):
        db.executescript(script)
        db.execute("INSERT INTO schema_version VALUES (?)", (version,))
    small, big = b'{"messages":[{"role":"user","content":"old"}]}', os.urandom(100_000)
    insert = (
        "INSERT INTO requests (ts, upstream, host, method, path, request_bytes, verdict,"
        " withheld, body, body_codec) VALUES (?, 'a', 'h', 'POST', '/p', 1, ?, '[]', ?, ?)"
    )
    db.execute(insert, (1.5, "forwarded", zstandard.ZstdCompressor().compress(small), "zstd"))
    db.execute(insert, (2.5, "forwarded", big, "raw"))
    db.execute(insert, (3.5, "blocked", None, "zstd"))
    db.close()
    store = AuditStore(path)
    assert store.body_of(1) == small and store.body_of(2) == big and store.body_of(3) is None
    rid = record(store, small)
    assert rid == 4 and store.body_of(4) == small
    verdict = chain.verify(store.conn())
    assert verdict.ok and verdict.requests == 4
    assert (
        store.conn().execute("SELECT COUNT(*) FROM requests WHERE body IS NOT NULL").fetchone()[0]
        == 0
    )


def test_a_full_database_fails_the_write_and_leaves_nothing_half_written(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "audit.db")
    first = record(store, b'{"a":1}')
    db = store.conn()
    pages = db.execute("PRAGMA page_count").fetchone()[0]
    db.execute(f"PRAGMA max_page_count={pages + 2}")  # the database may not grow
    body = json.dumps(
        {"messages": [{"role": "user", "content": os.urandom(9000).hex()} for _ in range(10)]}
    )
    with pytest.raises(AuditError) as err:
        record(store, body.encode())
    assert "database or disk is full" in err.value.message and "free disk space" in (
        err.value.hint or ""
    )
    assert db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == 1  # rolled back whole
    db.execute("PRAGMA max_page_count=1073741823")
    rid = record(store, body.encode())  # no chunk id from the failed write is reused
    assert store.body_of(rid) == body.encode() and store.body_of(first) == b'{"a":1}'
    assert chain.verify(db).ok


def test_a_newer_schema_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "audit.db"
    AuditStore(path)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("INSERT INTO schema_version VALUES (99)")
    db.close()
    before = path.read_bytes()
    with pytest.raises(AuditError, match="newer than this gate"):
        AuditStore(path)
    assert path.read_bytes() == before and not list(tmp_path.glob("*.corrupt-*"))


@pytest.mark.parametrize(
    "garbage", [b"this is not a database" * 100, b"SQLite format 3\x00" + os.urandom(8192)]
)
def test_a_corrupt_file_is_moved_aside_and_a_fresh_one_started(
    tmp_path: Path, garbage: bytes
) -> None:
    path = tmp_path / "audit.db"
    path.write_bytes(garbage)
    messages: list[str] = []
    sink = logger.add(messages.append, level="WARNING", format="{message}")
    try:
        store = AuditStore(path)
    finally:
        logger.remove(sink)
    aside = list(tmp_path.glob("audit.db.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == garbage
    assert stat.S_IMODE(aside[0].stat().st_mode) == 0o600
    assert any(str(path) in m and str(aside[0]) in m for m in messages), messages
    assert store.body_of(record(store, b"{}")) == b"{}"
    assert chain.verify(store.conn()).ok


def test_files_are_owner_only(tmp_path: Path) -> None:
    data = tmp_path / "data"
    old = os.umask(0o022)  # a usual umask: gate must not rely on it
    try:
        store = AuditStore(data / "audit.db", background=True)
        for body in bodies(3):
            record(store, body)
    finally:
        os.umask(old)
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    files = list(data.iterdir())
    assert {p.name for p in files} == {"audit.db", "audit.db-wal", "audit.db-shm"}
    for p in files:
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, p
    store.close()


def test_every_chunk_is_indexed_once(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "audit.db")
    for body in bodies(5):
        record(store, body)
    db = store.conn()
    n = db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0]
    assert index.index_pending(db) == n
    assert index.index_pending(db) == 0  # resends add nothing to index
    hits = db.execute(
        "SELECT COUNT(*) FROM chunk_text WHERE chunk_text MATCH 'foxtrot'"
    ).fetchone()[0]
    assert 0 < hits < n


def test_the_worker_checkpoints_the_wal_by_pages_written_and_completes_responses(
    tmp_path: Path,
) -> None:
    """Requests' commits never checkpoint; the worker's own commits do, once ~8 MB of new
    pages wait in the WAL (counted by SQLite, not read off the reused WAL file's size)."""
    path = tmp_path / "audit.db"
    store = AuditStore(path, background=True)
    assert store.worker is not None
    rows = []
    for _ in range(12):  # ~12 MB of incompressible new chunks
        rid = record(store, os.urandom(1 << 20))
        store.worker.record_response(rid, Response(status=200, latency_ms=1.5, usage=Usage(3, 4)))
        rows.append(rid)
    deadline = time.monotonic() + 20
    while path.stat().st_size < 6 << 20 and time.monotonic() < deadline:
        store.worker.wake()  # each pass commits responses: the WAL's pages are copied back
        time.sleep(0.05)
    assert path.stat().st_size >= 6 << 20  # the pages left the WAL for the database file
    store.close()  # queued response updates are written before the worker ends
    again = AuditStore(path)
    assert [again.get(r, body=False)["status"] for r in rows] == [200] * 12  # type: ignore[index]
    assert again.get(rows[-1], body=False)["output_tokens"] == 4  # type: ignore[index]
    assert chain.verify(again.conn()).ok


def test_a_row_is_a_frozen_record_stored_as_plain_strings(tmp_path: Path) -> None:
    """The store takes one typed record (not loose keywords); its enum verdict is stored as
    the string rows have always held, and the row's hashes are the ones its columns give,
    so `gate audit verify` reads rows written before and after alike."""
    with pytest.raises(TypeError):
        RequestRow("anthropic", "h", "POST", "/", 1, Disposition.FORWARDED)  # type: ignore[misc]
    row = RequestRow(
        upstream="anthropic",
        host="api.example",
        method="POST",
        path="/v1/messages",
        request_bytes=2,
        verdict=Disposition.MODIFIED,
        ts=1000.0,
        agent="claude-code",
        user_name="ann",
        withheld=({"kind": "secret", "rule": "r"},),
    )
    with pytest.raises(AttributeError):
        row.verdict = Disposition.BLOCKED  # type: ignore[misc]
    store = AuditStore(tmp_path / "audit.db")
    rid = store.record_request(row)
    store.record_response(rid, Response(status=200, latency_ms=2.0, usage=Usage(1, 2)))
    raw = sqlite3.connect(tmp_path / "audit.db")
    verdict, withheld, user, ts = raw.execute(
        "SELECT verdict, withheld, user_name, ts FROM requests WHERE id=?", (rid,)
    ).fetchone()
    raw.close()
    assert (type(verdict), verdict, user, ts) == (str, "modified", "ann", 1000.0)
    assert json.loads(withheld) == [{"kind": "secret", "rule": "r"}]
    fields = {**row.columns(1000.0, withheld), "prev_hash": chain.GENESIS}
    assert store.get(rid)["input_tokens"] == 1  # type: ignore[index]
    assert chain.record_hash(fields) == chain.record_hash({**fields, "verdict": "modified"})
    assert chain.verify(store.conn()).ok
    store.close()
