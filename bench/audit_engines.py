"""The audit's two engines side by side in one run: SQLite (audit.db) and PostgreSQL (a
throwaway server on 127.0.0.1 unless --pg-url names one).

The throwaway server keeps fsync on (a commit waits for its WAL flush, as in use); SQLite
runs as gate runs it (WAL, synchronous=NORMAL: no fsync per commit).

1. Per request: record_request wall and CPU time for the turns of one session, and disk
   per request once the background pass has run.
2. Eight gates at once: eight processes, each its own store on the same database (one
   audit.db, or one PostgreSQL database), each writing its own session; requests per
   second over all of them.
"""

from __future__ import annotations

import multiprocessing
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.append(str(ROOT / "tests"))  # tests/postgres.py: the throwaway server

from gate.audit import index, pg_schema  # noqa: E402
from gate.audit.records import RequestRow  # noqa: E402
from gate.audit.store import AuditStore  # noqa: E402
from gate.config import AuditSettings  # noqa: E402

META: dict[str, Any] = {
    "upstream": "anthropic",
    "host": "api.anthropic.com",
    "method": "POST",
    "path": "/v1/messages",
    "verdict": "forwarded",
}


def _store(engine: str, where: str) -> AuditStore:
    if engine == "sqlite":
        return AuditStore(Path(where) / "audit.db")
    return AuditStore(Path(where) / "unused.db", AuditSettings(url=where))


def per_request(engine: str, where: str, bodies: list[bytes], disk: Any) -> dict[str, Any]:
    store = _store(engine, where)
    wall, cpu = [], []
    for n, body in enumerate(bodies):
        t0, c0 = time.perf_counter(), time.thread_time()
        store.record_request(
            RequestRow(**META, session="s:bench", request_bytes=len(body), body=body)
        )
        wall.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
        if n % 10 == 9:
            index.index_pending(store.conn())
    index.index_pending(store.conn())
    size = (
        pg_schema.used_bytes(store.conn())
        if engine == "postgresql"  # type: ignore[arg-type]
        else 0
    )
    store.close()
    if engine == "sqlite":
        size = disk(store.path)
    half = len(bodies) // 2  # the later turns: a long conversation's steady state
    return {
        "wall": statistics.median(wall[half:]),
        "cpu": statistics.median(cpu[half:]),
        "disk_per_request": size / len(bodies),
    }


def _writer(engine: str, where: str, seed: int, bodies: list[bytes], start: Any) -> None:
    store = _store(engine, where)
    start.wait()
    for body in bodies:
        store.record_request(
            RequestRow(**META, session=f"s:{seed}", request_bytes=len(body), body=body)
        )
    store.close()


def concurrent(engine: str, where: str, sessions: list[list[bytes]]) -> float:
    """Requests per second with one process per session writing at once."""
    _store(engine, where).close()  # schema made before the clock starts
    ctx = multiprocessing.get_context("spawn")
    start = ctx.Event()
    procs = [
        ctx.Process(target=_writer, args=(engine, where, n, s, start))
        for n, s in enumerate(sessions)
    ]
    for p in procs:
        p.start()
    time.sleep(2.0)  # let every process import and connect
    t0 = time.perf_counter()
    start.set()
    for p in procs:
        p.join()
    took = time.perf_counter() - t0
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return sum(map(len, sessions)) / took


def _pg_server(url: str | None) -> Iterator[str]:
    """A database URL: the one given, or a fresh database on a throwaway local server."""
    if url:
        yield from (url, url)
        return
    import postgres

    for server in postgres.start_server(durable=True):
        yield server.new_database()
        yield server.new_database()


def report(session: Any, disk: Any, pg_url: str | None, quick: bool) -> None:
    """`session` and `disk` are bench/audit.py's: the bodies and the SQLite file's size."""
    turns, final = (40, 200_000) if quick else (100, 500_000)
    bodies = list(session(turns, final))
    per_gate = 15 if quick else 40
    sessions = [list(session(per_gate, 100_000, tail=f"gate {n}")) for n in range(8)]
    urls = _pg_server(pg_url)
    with tempfile.TemporaryDirectory() as tmp:
        Path(tmp, "one").mkdir()
        Path(tmp, "eight").mkdir()
        lite = per_request("sqlite", str(Path(tmp, "one")), bodies, disk)
        pg = per_request("postgresql", next(urls), bodies, disk)
        print(
            f"\n== SQLite beside PostgreSQL: a {turns}-turn session, final body"
            f" {len(bodies[-1]) / 1e3:.0f} KB (p50 of the later half of its turns) =="
        )
        print(f"  {'':12} {'write wall':>11} {'write CPU':>10} {'disk/request':>13}")
        for name, r in (("SQLite", lite), ("PostgreSQL", pg)):
            print(
                f"  {name:12} {r['wall'] * 1e3:8.2f} ms {r['cpu'] * 1e3:7.2f} ms"
                f" {r['disk_per_request'] / 1e3:9.1f} KB"
            )
        rate_lite = concurrent("sqlite", str(Path(tmp, "eight")), sessions)
        rate_pg = concurrent("postgresql", next(urls), sessions)
        print(
            f"  8 gates writing at once ({per_gate} turns each, final body ~100 KB):"
            f" SQLite {rate_lite:.0f} requests/s, PostgreSQL {rate_pg:.0f} requests/s"
        )
    for _ in urls:  # stop the throwaway server
        pass
