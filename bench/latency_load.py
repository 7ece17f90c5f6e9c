"""The latency bench's concurrency mode: 16 sessions at once through one proxy, one of them
sending 2 MB bodies it never sent before, gate beside plain mitmproxy.

Each proxy gets two timed phases of `seconds` each: the 15 ordinary sessions alone, then
the same 15 plus the heavy one. Ordinary sessions are agents on a growing conversation
(every request a new turn, the previous body resent); the heavy session's every string is
new, so no cache helps. Reported per proxy: requests/s with all 16, the ordinary sessions'
p50/p95 latency, their time to first byte without and with the heavy session (the
heavy session's effect), the proxy process's CPU time per request in each phase (all its
threads: on a shared machine this moves far less with the load than the times do), and its
peak RSS.
"""

from __future__ import annotations

import contextlib
import glob
import http.client
import itertools
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

SESSIONS = 16
HEAVY_BYTES = 2_000_000


@dataclass
class Phase:
    requests: int = 0
    seconds: float = 0.0
    ttfb: list[float] = field(default_factory=list)  # ordinary sessions, ms
    total: list[float] = field(default_factory=list)  # ordinary sessions, ms
    heavy: list[float] = field(default_factory=list)  # the heavy session, ms
    cpu: float = 0.0  # the proxy process's CPU seconds over the phase, every thread
    errors: list[str] = field(default_factory=list)

    def pooled_with(self, other: Phase) -> Phase:
        return Phase(
            requests=self.requests + other.requests,
            seconds=self.seconds + other.seconds,
            ttfb=self.ttfb + other.ttfb,
            total=self.total + other.total,
            heavy=self.heavy + other.heavy,
            cpu=self.cpu + other.cpu,
            errors=self.errors + other.errors,
        )


def _session(
    port: int,
    path: str,
    headers: dict[str, str],
    bodies: Iterator[bytes],
    stop: threading.Event,
    phase: Phase,
    lock: threading.Lock,
    heavy: bool,
) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        while not stop.is_set():
            body = next(bodies)
            t0 = time.perf_counter()
            conn.request("POST", path, body, headers)
            resp = conn.getresponse()
            t1 = time.perf_counter()
            data = resp.read()
            t2 = time.perf_counter()
            with lock:
                if resp.status != 200:
                    phase.errors.append(f"HTTP {resp.status}: {data[:200]!r}")
                    return
                phase.requests += 1
                if heavy:
                    phase.heavy.append((t2 - t0) * 1000)
                else:
                    phase.ttfb.append((t1 - t0) * 1000)
                    phase.total.append((t2 - t0) * 1000)
    except (OSError, http.client.HTTPException) as exc:
        with lock:
            phase.errors.append(f"{type(exc).__name__}: {exc}")
    finally:
        conn.close()


def run_phase(
    pid: int,
    port: int,
    path: str,
    headers: dict[str, str],
    ordinary: list[Iterator[bytes]],
    heavy: Iterator[bytes] | None,
    seconds: float,
) -> Phase:
    phase, lock, stop = Phase(), threading.Lock(), threading.Event()
    threads = [
        threading.Thread(
            target=_session, args=(port, path, headers, b, stop, phase, lock, False), daemon=True
        )
        for b in ordinary
    ]
    if heavy is not None:
        threads.append(
            threading.Thread(
                target=_session,
                args=(port, path, headers, heavy, stop, phase, lock, True),
                daemon=True,
            )
        )
    t0, c0 = time.perf_counter(), process_cpu(pid)
    for t in threads:
        t.start()
    time.sleep(seconds)
    stop.set()
    for t in threads:
        t.join(180)  # a request under way finishes
    phase.seconds = time.perf_counter() - t0
    phase.cpu = process_cpu(pid) - c0
    return phase


def process_cpu(pid: int) -> float:
    """User plus system CPU seconds of a process so far, all its threads, and of its
    children still running (gate's secret-scan worker: its CPU is gate's too)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:  # ended meanwhile
        return 0.0
    own = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return own + sum(process_cpu(child) for child in _children(pid))


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in glob.glob(f"/proc/{pid}/task/*/children"):
        with contextlib.suppress(OSError), open(task) as f:
            out += [int(c) for c in f.read().split()]
    return out


def fresh_heavy(template: bytes) -> Iterator[bytes]:
    """2 MB bodies, each with every string new: a counter written into each one."""
    marker = b"@@N@@"
    assert marker in template
    for n in itertools.count():
        yield template.replace(marker, f"{n:08d}".encode())


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory, plus its running children's (their peaks
    added: an upper bound of the two together)."""
    own = float("nan")
    with contextlib.suppress(OSError), open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                own = int(line.split()[1]) / 1024
    return own + sum(peak_rss_mib(child) for child in _children(pid))


def cpu_per_request(p: Phase) -> float:
    return p.cpu * 1000 / p.requests if p.requests else float("nan")


def pct(xs: list[float], q: float) -> float:
    if not xs:
        return float("nan")
    s = sorted(xs)
    i = (len(s) - 1) * q
    lo = int(i)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (i - lo)


@dataclass
class Outcome:
    name: str
    alone: Phase
    loaded: Phase
    rss: float

    def pooled_with(self, other: Outcome) -> Outcome:
        """Two rounds of the same proxy as one (its peak RSS is the process's so far)."""
        return Outcome(
            self.name,
            self.alone.pooled_with(other.alone),
            self.loaded.pooled_with(other.loaded),
            max(self.rss, other.rss),
        )


def measure(
    name: str,
    port: int,
    pid: int,
    path: str,
    headers: dict[str, str],
    make_ordinary: Callable[[int], Iterator[bytes]],
    heavy_template: bytes,
    seconds: float,
) -> Outcome:
    """Warm up briefly, then the two phases; each session starts a new conversation."""
    warm = run_phase(pid, port, path, headers, [make_ordinary(99)], None, 1.0)
    if warm.errors:
        raise RuntimeError(f"{name}: {warm.errors[0]}")
    alone = run_phase(
        pid, port, path, headers, [make_ordinary(i) for i in range(SESSIONS - 1)], None, seconds
    )
    loaded = run_phase(
        pid,
        port,
        path,
        headers,
        [make_ordinary(100 + i) for i in range(SESSIONS - 1)],
        fresh_heavy(heavy_template),
        seconds,
    )
    for p in (alone, loaded):
        if p.errors:
            raise RuntimeError(f"{name}: {p.errors[0]}")
    return Outcome(name, alone, loaded, peak_rss_mib(pid))


def report(outcomes: list[Outcome], fmt: str, seconds: float) -> None:
    print(
        f"\n--concurrent ({fmt}): {SESSIONS} sessions at once for {seconds:.0f} s: 15 growing"
        " conversations, then the same plus one sending 2 MB bodies it never sent before;"
        " times in ms"
    )
    head = (
        f"{'proxy':>10} | {'req/s':>7} | {'ordinary p50':>12} {'p95':>8} | "
        f"{'TTFB p50 alone':>14} {'with heavy':>10} {'effect':>7} | "
        f"{'TTFB p95 alone':>14} {'with heavy':>10} | {'heavy p50':>9} {'n':>4} | "
        f"{'CPU ms/req alone':>16} {'with heavy':>10} | {'peak RSS':>8}"
    )
    print(head)
    print("-" * len(head))
    for o in outcomes:
        a, b = o.alone, o.loaded
        t50a, t50b = pct(a.ttfb, 0.5), pct(b.ttfb, 0.5)
        print(
            f"{o.name:>10} | {b.requests / b.seconds:7.1f} | {pct(b.total, 0.5):12.2f}"
            f" {pct(b.total, 0.95):8.2f} | {t50a:14.2f} {t50b:10.2f}"
            f" {(t50b / t50a - 1) * 100:+6.0f}% | {pct(a.ttfb, 0.95):14.2f}"
            f" {pct(b.ttfb, 0.95):10.2f} | {pct(b.heavy, 0.5):9.1f} {len(b.heavy):>4} |"
            f" {cpu_per_request(a):16.2f} {cpu_per_request(b):10.2f} | {o.rss:6.0f} MiB"
        )
    by = {o.name: o for o in outcomes}
    if "mitmproxy" not in by:
        return
    m = by["mitmproxy"].loaded
    for name, o in by.items():  # this gate, and a baseline gate run beside it (--baseline)
        if not name.startswith("gate"):
            continue
        g = o.loaded
        thr = (g.requests / g.seconds) / (m.requests / m.seconds)
        p95 = pct(g.total, 0.95) / pct(m.total, 0.95)
        eff = pct(g.ttfb, 0.5) / pct(o.alone.ttfb, 0.5) - 1
        eff95 = pct(g.ttfb, 0.95) / pct(o.alone.ttfb, 0.95) - 1
        print(
            f"{name}/mitmproxy: throughput {thr:.2f}× (target ≥ 0.8×), ordinary p95"
            f" {p95:.2f}× (target ≤ 1.3×); the heavy session moves its ordinary TTFB p50 by"
            f" {eff * 100:+.0f}% (target ≤ +10%), p95 by {eff95 * 100:+.0f}%;"
            f" peak RSS {o.rss:.0f} MiB"
        )
