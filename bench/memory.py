"""Decision memory cost per ask finding, next to the HMAC gate already pays per finding.

For 0, 1,000 and 10,000 remembered answers on disk it prints the p50 and p95 of:
  fingerprint  HMAC-SHA256 of kind+value (the baseline: computed for every ask finding)
  lookup hit   a remembered answer found (stat of memory.json + dict lookup)
  lookup miss  nothing remembered for this content
  remember     one answer stored (read-modify-write, fsync, rename, under the file lock)
Nothing passes or fails. Targets: lookup <= 20 us at 10,000 entries (it runs per ask
finding, on the request path); remember <= 100 ms at 10,000 (once per answer).
With --team, the same for team answers in PostgreSQL (a throwaway server on 127.0.0.1,
fsync on): a lookup there is a round trip, paid per request with ask findings that no
answer of this machine decided (all of a request's findings in one query).
Run: .venv/bin/python bench/memory.py [--n 2000] [--team]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gate.ask.memory import DecisionMemory
from gate.ask.memory_file import MemoryFile, Remembered, memory_path


def timings(fn: Callable[[int], object], n: int) -> tuple[float, float]:
    """(p50, p95) in microseconds of n calls fn(i)."""
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t0) * 1e6)
    q = statistics.quantiles(out, n=20)
    return statistics.median(out), q[18]


def run(size: int, n: int) -> list[tuple[str, tuple[float, float]]]:
    with tempfile.TemporaryDirectory() as tmp:
        mem = DecisionMemory(Path(tmp), os.urandom(32))
        fps = [mem.fingerprint(os.urandom(20).hex(), "github-token") for _ in range(size)]
        now = time.time()
        entries = [
            Remembered(
                id=os.urandom(5).hex(),
                fingerprint=fp,
                kind="github-token",
                answer="approve",
                scope="always",
                session=None,
                project=None,
                created=now,
                expires=now + 86400,
            )
            for fp in fps
        ]
        MemoryFile(memory_path(Path(tmp))).update(lambda _: entries)  # one write, not 10k
        here = {"session": "s", "project": "/p"}
        values = [os.urandom(20).hex() for _ in range(n)]
        hit = fps[0] if fps else mem.fingerprint("x", "k")
        return [
            ("fingerprint", timings(lambda i: mem.fingerprint(values[i], "github-token"), n)),
            ("lookup hit", timings(lambda i: mem.lookup(hit, "github-token", **here), n)),
            ("lookup miss", timings(lambda i: mem.lookup(values[i], "github-token", **here), n)),
            (
                "remember",
                timings(
                    lambda i: mem.remember(
                        values[i], "github-token", "block", "always", question_id="q", **here
                    ),
                    max(20, n // 50),
                ),
            ),
        ]


def run_team(size: int, n: int, url: str) -> list[tuple[str, tuple[float, float]]]:
    """The same operations on team answers in the PostgreSQL database at `url`."""
    import psycopg

    from gate.ask.memory_team import _INSERT, TeamMemory
    from gate.ask.team_key import TeamKey

    team = TeamMemory(url, TeamKey.derive(Path("bench.key"), os.urandom(32)))
    repo = "github.com/acme/api"
    fps = [team.fingerprint(os.urandom(20).hex(), "github-token") for _ in range(size)]
    team.lookup([("x", "k")], repo)  # the tables made before the clock starts
    now = time.time()
    rows = []
    for i, fp in enumerate(fps):
        values = [
            f"t{i:010x}",
            team.key.id,
            fp,
            "github-token",
            "approve",
            repo,
            now,
            now + 86400,
            "q",
            "bench",
        ]
        rows.append((*values, team._sign(values)))
    with psycopg.connect(url, autocommit=True) as conn:
        with conn.cursor() as cur, conn.transaction():
            cur.executemany(_INSERT, rows)  # one transaction, not 10k
        # As autovacuum would after such a load: without statistics the planner scans.
        conn.execute("ANALYZE team_answers")
    hit = fps[0] if fps else "x"
    values = [os.urandom(20).hex() for _ in range(n)]
    out = [
        ("fingerprint", timings(lambda i: team.fingerprint(values[i], "github-token"), n)),
        ("lookup hit", timings(lambda i: team.lookup([(hit, "github-token")], repo), n)),
        ("lookup miss", timings(lambda i: team.lookup([(values[i], "github-token")], repo), n)),
        (
            "remember",
            timings(
                lambda i: team.remember(
                    values[i], "github-token", "block", repo=repo, question_id="q"
                ),
                max(20, n // 50),
            ),
        ),
    ]
    team.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=2000)
    parser.add_argument(
        "--team",
        action="store_true",
        help="also team answers in a throwaway PostgreSQL (initdb/pg_ctl)",
    )
    args = parser.parse_args()
    n = args.n
    print(
        f"python {platform.python_version()}, {os.cpu_count()} cores, n={n},"
        f" load {os.getloadavg()[0]:.1f}"
    )
    print(f"{'entries':>8}  {'operation':<12}  {'p50 us':>9}  {'p95 us':>9}  {'vs HMAC':>8}")
    for size in (0, 1000, 10000):
        _print(size, run(size, n))
    if not args.team:
        return
    sys.path.append(str(Path(__file__).resolve().parent.parent / "tests"))
    import postgres

    print("team answers in PostgreSQL (memory.json above):")
    for server in postgres.start_server(durable=True):
        for size in (0, 1000, 10000):
            _print(size, run_team(size, n, server.new_database()))


def _print(size: int, rows: list[tuple[str, tuple[float, float]]]) -> None:
    base = rows[0][1][0]
    for name, (p50, p95) in rows:
        print(f"{size:>8}  {name:<12}  {p50:>9.1f}  {p95:>9.1f}  {p50 / base:>7.1f}x")


if __name__ == "__main__":
    main()
