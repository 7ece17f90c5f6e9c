"""What the audit costs: bytes on disk for a long session, and time on the request's path.

1. Size: a simulated 100-turn Claude Code session (each turn resends the conversation plus
   one tool call and its result, with `cache_control` moved to the newest message) is
   recorded; audit bytes on disk are printed next to the sum of the request bodies and the
   final request's size (target: at most 2x the final request), and next to the previous
   design (one zstd'd body per row).
2. Time: record_request for turn 100 of sessions whose final body is 50 KB, 500 KB and
   2 MB, and turn 600 of sessions of small messages (many more chunks for the same size),
   by this tree's gate and, beside it, by the baseline revision's gate/ (`--baseline REV`,
   extracted with git archive; each runs in a child process), next to a plain zstd insert
   of the same body and a raw insert (what the previous design did on the path for bodies
   over 64 KB). Background work (packing, full-text indexing) is timed apart: it runs after
   the request has left.

Times are wall clock (what a request waits) with the thread's CPU time beside them: on a
loaded machine the wall clock includes waiting for a core. Prints numbers; nothing passes
or fails. Run: .venv/bin/python bench/audit.py [--quick]
3. SQLite beside PostgreSQL (bench/audit_engines.py; alone with --engines): write cost and
   disk per request, and throughput with 8 gates writing at once.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import zstandard

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "audit"))
from latency import _sources, _system, _tools
from session_kit import conversation  # the audit tests' session builder

from gate.audit import chunks, index, worker
from gate.audit.records import RequestRow
from gate.audit.store import AuditStore

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "39f0799"  # main before the resent-prefix fast path (bench/README.md, audit)
PROJECT = Path("/home/dev/project")
META: dict[str, Any] = {
    "upstream": "anthropic",
    "host": "api.anthropic.com",
    "method": "POST",
    "path": "/v1/messages",
    "verdict": "forwarded",
    "session": "s:bench",
}


def session(turns: int, final_bytes: int, tail: str = "") -> Iterator[bytes]:
    """Bodies of a session whose turn `turns` is about `final_bytes` long: Claude Code's
    system prompt and tools, files read from real source text."""
    sources = _sources()
    corpus = "\n".join(text for _, text in sources)  # real source text, sliced per turn
    base = {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 32000,
        "system": _system(PROJECT),
        "tools": _tools(),
        "metadata": {"user_id": "user_" + "ab" * 32 + "_account__session_bench"},
    }
    per_turn = max(200, (final_bytes - len(json.dumps(base))) // turns - 250)

    def result(turn: int) -> tuple[str, str]:
        return sources[turn % len(sources)][0], _slice(corpus, turn * per_turn, per_turn)

    return conversation(turns, base, result, tail=tail)


def _slice(corpus: str, start: int, length: int) -> str:
    start %= max(1, len(corpus) - length)
    return corpus[start : start + length]


def disk(path: Path) -> int:
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db.close()
    return sum(p.stat().st_size for p in path.parent.glob(f"{path.name}*"))


def size_report(turns: int, final: int) -> None:
    bodies = list(session(turns, final))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "audit.db"
        store = AuditStore(path)
        for body in bodies:
            store.record_request(RequestRow(**META, request_bytes=len(body), body=body))
        index.index_pending(store.conn())
        breakdown = _breakdown(store.conn())
        store.close()
        ours = disk(path)
        old = _old_design(Path(tmp) / "old.db", bodies)
    total, last = sum(map(len, bodies)), len(bodies[-1])
    print(f"\n{turns}-turn session, final request {last / 1e3:.0f} KB")
    print(f"  sum of request bodies   {total / 1e6:9.2f} MB")
    print(f"  final request           {last / 1e6:9.2f} MB")
    print(
        f"  audit on disk (chunks)  {ours / 1e6:9.2f} MB   = {ours / last:.2f}x final"
        f" (target <= 2x), {total / ours:.0f}x smaller than the bodies"
    )
    print(f"  previous design (zstd per row) {old / 1e6:6.2f} MB   = {old / last:.2f}x final")
    if breakdown:
        print("  of which: " + ", ".join(f"{k} {v / 1e3:.0f} KB" for k, v in breakdown))


def _breakdown(db: sqlite3.Connection) -> list[tuple[str, int]]:
    try:
        rows = db.execute(
            "SELECT name, SUM(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC LIMIT 5"
        ).fetchall()
    except sqlite3.Error:
        return []
    return [(str(n), int(s)) for n, s in rows]


def _old_design(path: Path, bodies: list[bytes]) -> int:
    db = _plain_db(path)
    for body in bodies:
        db.execute(
            "INSERT INTO r (body) VALUES (?)", (zstandard.ZstdCompressor(level=3).compress(body),)
        )
    db.close()
    return disk(path)


def _plain_db(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    db.execute("CREATE TABLE IF NOT EXISTS r (id INTEGER PRIMARY KEY, body BLOB)")
    return db


def timing_report(
    final: int, label: str, samples: int, turns: int, baseline: Path | None, rounds: int
) -> None:
    """Turn `turns` recorded `samples` times, each with a different new tail (as a real
    turn), by this tree's gate and by the baseline's, each in a child process; `rounds`
    alternated runs of each, pooled (a shared machine's load drifts between runs)."""
    runs: dict[Path, list[dict[str, Any]]] = {}
    for _ in range(rounds):
        for tree in ([baseline] if baseline is not None else []) + [ROOT]:
            runs.setdefault(tree, []).append(_child(final, samples, turns, tree))
    now = _pooled(runs[ROOT])
    before = _pooled(runs[baseline]) if baseline is not None else None
    cpu = f"cpu {_ms(now['cpu'], 50)}"
    if before is not None:
        cpu = (
            f"cpu before {_ms(before['cpu'], 50)}, after {_ms(now['cpu'], 50)}"
            f" ({statistics.median(now['cpu']) / statistics.median(before['cpu']):.2f}x)"
        )
    print(
        f"  {label:>6} ({now['size'] / 1e3:5.0f} KB, {now['chunks']:4d} chunks)  gate {cpu}"
        f"  wall p50 {_ms(now['wall'], 50)} p90 {_ms(now['wall'], 90)}"
        + (f" (before {_ms(before['wall'], 50)})" if before is not None else "")
        + f"\n{'':>31}zstd insert p50 {_ms(now['plain'], 50)} | raw insert p50"
        f" {_ms(now['raw'], 50)} | background p50 {_ms(now['background'], 50)} | every"
        f" chunk new p50 {_ms(now['cold'], 50)} (cpu {_ms(now['cold_cpu'], 50)})"
    )


def _pooled(runs: list[dict[str, Any]]) -> dict[str, Any]:
    out = dict(runs[0])
    for key, value in runs[0].items():
        if isinstance(value, list):
            out[key] = [x for run in runs for x in run[key]]
    return out


def _child(final: int, samples: int, turns: int, tree: Path) -> dict[str, Any]:
    """Run turn_times in a child whose `gate` package is the one in `tree`."""
    out = subprocess.run(
        [
            sys.executable,
            __file__,
            "--child",
            str(final),
            "--samples",
            str(samples),
            "--turns",
            str(turns),
        ],
        check=True,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tree)},
        cwd=tempfile.gettempdir(),
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def baseline_tree(rev: str, into: Path) -> Path | None:
    """`rev`'s gate package, extracted with git archive (None, with a note, if it cannot)."""
    try:
        data = subprocess.run(
            ["git", "-C", str(ROOT), "archive", rev, "gate"], check=True, capture_output=True
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(into, filter="data")
    except (OSError, subprocess.CalledProcessError, tarfile.TarError) as exc:
        print(f"  (no baseline: cannot extract {rev}'s gate/: {exc})")
        return None
    return into


def turn_times(final: int, samples: int, turns: int) -> dict[str, Any]:
    """Record turns 1..turns-1 of a session, then turn `turns` `samples` times, each with a
    different new text block in its newest message; time each of those writes."""
    it = session(turns, final)
    last = next(it)
    with tempfile.TemporaryDirectory() as tmp:
        store = AuditStore(Path(tmp) / "audit.db")
        db = store.conn()
        db.execute("PRAGMA wal_autocheckpoint=0")  # as in gate serve: the background pass does it
        for body in it:
            store.record_request(RequestRow(**META, request_bytes=len(last), body=last))
            last = body
        _background(db)
        out: dict[str, Any] = {"size": len(last), "chunks": len(chunks.split(last))}
        bodies = [with_tail(last, f"Go ahead, round {k}.") for k in range(samples)]
        out["wall"], out["cpu"], out["background"] = [], [], []
        for body in bodies:
            t0, c0 = time.perf_counter(), time.thread_time()
            store.record_request(RequestRow(**META, request_bytes=len(body), body=body))
            out["wall"].append(time.perf_counter() - t0)
            out["cpu"].append(time.thread_time() - c0)
            t0 = time.perf_counter()
            _background(db)
            out["background"].append(time.perf_counter() - t0)
        out["cold"], out["cold_cpu"] = [], []  # every chunk new (resumed after a restart)
        for k in range(max(3, samples // 4)):
            body = bodies[0].replace(b"e", b"EFGHIJKLMN"[k : k + 1])
            t0, c0 = time.perf_counter(), time.thread_time()
            store.record_request(
                RequestRow(**{**META, "session": f"s:cold{k}"}, request_bytes=len(body), body=body)
            )
            out["cold"].append(time.perf_counter() - t0)
            out["cold_cpu"].append(time.thread_time() - c0)
            _background(db)
        store.close()
        out["plain"] = _plain_times(Path(tmp) / "plain.db", bodies, compress=True)
        out["raw"] = _plain_times(Path(tmp) / "raw.db", bodies, compress=False)
    return out


def with_tail(body: bytes, tail: str) -> bytes:
    """`body` with a text block put first in its newest message: what session_kit's
    `conversation(tail=...)` makes of the last turn, without building every turn again."""
    at = body.rindex(_NEWEST) + len(_NEWEST)
    block = json.dumps({"type": "text", "text": tail}, separators=(",", ":")).encode()
    return body[:at] + block + b"," + body[at:]


_NEWEST = b'{"role":"user","content":['


def _background(db: sqlite3.Connection) -> None:
    """What gate serve's background thread does after a request (gate.audit.worker): index
    the new chunks, and checkpoint once ~WAL_PAGES new pages wait in the WAL (the worker's
    connection does it by SQLite's own page count; here, by the WAL's size, truncated
    after each checkpoint so that the size counts new pages)."""
    index.index_pending(db)
    wal = Path(db.execute("PRAGMA database_list").fetchone()[2] + "-wal")
    pages = getattr(worker, "WAL_PAGES", 2048)  # (a baseline tree's gate may predate it)
    if wal.exists() and wal.stat().st_size > pages * 4096:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _plain_times(path: Path, bodies: list[bytes], compress: bool) -> list[float]:
    db = _plain_db(path)
    out = []
    for body in bodies:
        t0 = time.perf_counter()
        blob = zstandard.ZstdCompressor(level=3).compress(body) if compress else body
        db.execute("BEGIN IMMEDIATE")
        db.execute("INSERT INTO r (body) VALUES (?)", (blob,))
        db.execute("COMMIT")
        out.append(time.perf_counter() - t0)
    db.close()
    return out


def _ms(xs: list[float], q: int) -> str:
    cut = statistics.quantiles(xs, n=100, method="inclusive")[q - 1] if len(xs) > 1 else xs[0]
    return f"{cut * 1000:6.2f} ms"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--quick", action="store_true", help="fewer samples (CI smoke run)")
    ap.add_argument(
        "--baseline",
        default=BASELINE,
        metavar="REV",
        help=f"git revision whose gate/ is timed beside this one (default {BASELINE})",
    )
    ap.add_argument(
        "--pg-url",
        metavar="URL",
        help="PostgreSQL database for the engines section (default: a throwaway"
        " server started on 127.0.0.1 with initdb/pg_ctl)",
    )
    ap.add_argument(
        "--engines", action="store_true", help="only the SQLite-beside-PostgreSQL section"
    )
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--samples", type=int, default=20, help=argparse.SUPPRESS)
    ap.add_argument("--turns", type=int, default=100, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(turn_times(args.child, args.samples, args.turns)))
        return
    samples, rounds = (5, 1) if args.quick else (20, 3)
    if args.engines:
        import audit_engines

        audit_engines.report(session, disk, args.pg_url, args.quick)
        return
    print("== audit size ==")
    for final in (500_000, 2_000_000):
        size_report(100, final)
    with tempfile.TemporaryDirectory() as tmp:
        print(
            f"\n== record_request on the request's path (before = {args.baseline}'s gate/,"
            f" after = this tree; CPU p50 of {rounds}x{samples} writes, runs alternated) =="
        )
        baseline = baseline_tree(args.baseline, Path(tmp))
        print(" turn 100 of a session (a ~20 KB tool result per turn at 2 MB):")
        for label, final in (("50 KB", 50_000), ("500 KB", 500_000), ("2 MB", 2_000_000)):
            timing_report(final, label, samples, 100, baseline, rounds)
        print(" turn 600 of a session of small messages (~3 KB a turn at 2 MB):")
        for label, final in (("500 KB", 500_000), ("2 MB", 2_000_000)):
            timing_report(final, label, samples, 600, baseline, rounds)
    import audit_engines

    audit_engines.report(session, disk, args.pg_url, args.quick)


if __name__ == "__main__":
    main()
