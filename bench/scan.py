"""Secret screening speed and accuracy: gate's Scanner next to detect-secrets' default scan.

On the same ~5 MB of text like what agents send (lockfiles, minified JS, logs, configs,
.env dumps, git logs, JSON-escaped tool results, with a few secrets), built at run time:
  cold     MB/s scanning every chunk once (empty cache), and the whole text as one string
  turn     time for a turn whose conversation is 2 MB with only the newest 20 KB new
  corpus   recall, whole-secret spans, false positives on tests/screen/secrets_corpus.py
detect-secrets runs with all its plugins and default filters (settings configured once,
nothing verified online) on a temp file, as `detect-secrets scan` would.

  long     CPU seconds per adversarial class (a long run of one alphabet or of keywords, no
           spaces) at 10K/100K/1M characters, this tree beside --baseline's (a git ref), each
           cell in a fresh process with a time cap
It prints numbers side by side; nothing passes or fails. Targets (issue 14): cold ≥ 100 MB/s,
turn ≤ 1 ms, `gate scan` start-up ≤ 0.3 s; long: linear in the length.
  --baseline REV (without --long): REV's gate/ and rules/ beside this tree's, in alternating
           fresh children: cold CPU MB/s, a turn's CPU, `gate scan` start-up (no detect-secrets)
Run: .venv/bin/python bench/scan.py [--size 5] [--quick] [--baseline main [--rounds 3]]
     [--long [--baseline main] [--cap 20]]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import string
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests" / "screen")]  # bench/screen.py shadows tests/screen

from detect_secrets.core import scan as ds_scan  # noqa: E402
from detect_secrets.settings import default_settings, get_settings  # noqa: E402
from secrets_corpus import Sample, negatives, next_turn, positives, realistic_text  # noqa: E402

from gate.screen.secrets import Scanner, Tier  # noqa: E402

VERIFY = "detect_secrets.filters.common.is_ignored_due_to_verification_policies"


@contextmanager
def detect_secrets_defaults() -> Iterator[None]:
    """All plugins, default filters, once for the whole run; never verify online."""
    with default_settings():
        get_settings().filters.pop(VERIFY, None)
        yield


def ds_findings(text: str, tmp: Path) -> list[tuple[int, str]]:
    """(line, secret value) of detect-secrets' default scan of `text` as a file."""
    path = tmp / "tool-output.txt"
    path.write_text(text, encoding="utf-8")
    return [(s.line_number, s.secret_value or "") for s in ds_scan.scan_file(str(path))]


def timed(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def cold(text: str, chunks: list[str], tmp: Path) -> None:
    mb = len(text.encode()) / 1e6
    scanner = Scanner()  # loaded outside the timing, as at gate start
    # Warm-up: each detector's first use reads its pattern once per process (gate/screen/
    # leads.py); a running gate has paid that after its first requests.
    warm = timed(lambda: [scanner.scan(s.text) for s in positives(1)])
    gate_chunks = timed(lambda: [scanner.scan(c) for c in chunks])
    gate_whole = timed(lambda: Scanner(scanner.detectors).scan(text))
    found = sum(len(Scanner(scanner.detectors).scan(c)) for c in chunks)
    with detect_secrets_defaults():
        ds_time = timed(lambda: ds_findings(text, tmp))
        ds_found = len(ds_findings(text, tmp))
    print(f"\ncold scan of {mb:.1f} MB ({len(chunks)} chunks)")
    print(f"  {'':24}{'MB/s':>10}{'seconds':>10}{'findings':>10}")
    print(f"  {'gate, per chunk':24}{mb / gate_chunks:>10.1f}{gate_chunks:>10.3f}{found:>10}")
    print(f"  {'gate, one string':24}{mb / gate_whole:>10.1f}{gate_whole:>10.3f}")
    print(f"  {'detect-secrets':24}{mb / ds_time:>10.2f}{ds_time:>10.2f}{ds_found:>10}")
    print(f"  gate is {ds_time / gate_chunks:.0f}x faster (target: gate >= 100 MB/s)")
    print(f"  warm-up, every detector used once (pattern analysis, once per process): {warm:.2f} s")


def turn(chunks: list[str], tmp: Path) -> None:
    history, new = next_turn(chunks)
    size = sum(map(len, history))
    scanner = Scanner()
    for c in history:
        scanner.scan(c)  # earlier turns
    runs = []
    for i in range(20):
        fresh = new + f"\n# turn {i}"
        runs.append(timed(lambda fresh=fresh: [scanner.scan(c) for c in (*history, fresh)]))
    runs.sort()
    with detect_secrets_defaults():
        ds_new = timed(lambda: ds_findings(new, tmp))
    print(f"\nturn: {size / 1e6:.1f} MB of history in {len(history)} strings + 20 KB new")
    print(
        f"  gate, cache warm       p50 {runs[10] * 1e3:.2f} ms   max {runs[-1] * 1e3:.2f} ms"
        "   (target <= 1 ms)"
    )
    print(
        f"  detect-secrets, 20 KB  {ds_new * 1e3:.0f} ms (it has no cache: every turn"
        f" rescans the history, ~{size / 1e6 / max(1e-9, 20e3 / 1e6 / ds_new):.1f} s)"
    )


def accuracy(tmp: Path) -> None:
    pos, neg = positives(), negatives()
    scanner = Scanner()
    g = {"found": 0, "whole": 0, "flagged": 0, "high": 0}
    d = {"found": 0, "whole": 0, "flagged": 0, "high": 0}
    spans = sum(len(s.spans) for s in pos)
    with detect_secrets_defaults():
        for s in pos:
            fs = scanner.scan(s.text)
            hits = ds_findings(s.text, tmp)
            for a, b in s.spans:
                over = [f for f in fs if f.start < b and f.end > a]
                g["found"] += bool(over)
                g["whole"] += any((f.start, f.end) == (a, b) for f in over)
                lines = range(s.text.count("\n", 0, a) + 1, s.text.count("\n", 0, b) + 2)
                on = [v for line, v in hits if line in lines]
                d["found"] += bool(on)
                d["whole"] += s.text[a:b] in on
        for s in neg:
            fs = scanner.scan(s.text)
            g["flagged"] += bool(fs)
            g["high"] += any(f.tier is Tier.HIGH for f in fs)
            d["flagged"] += bool(ds_findings(s.text, tmp))
    print(
        f"\nlabelled corpus: {spans} secrets in {len(pos)} samples, {len(neg)} harmless"
        " samples (tests/screen/secrets_corpus.py)"
    )
    print(f"  {'':16}{'recall':>8}{'whole':>8}{'FPR':>8}{'precision':>11}{'high FP':>9}")
    for name, r in (("gate", g), ("detect-secrets", d)):
        precision = r["found"] / max(1, r["found"] + r["flagged"])
        high = str(r["high"]) if name == "gate" else "-"
        print(
            f"  {name:16}{r['found'] / spans:>8.3f}{r['whole'] / spans:>8.3f}"
            f"{r['flagged'] / len(neg):>8.3f}{precision:>11.3f}{high:>9}"
        )
    print(
        "  recall: secrets overlapped by a finding (detect-secrets: on the same line);"
        " whole: the finding is exactly the secret; FPR: harmless samples with any finding"
    )
    _missed(pos, scanner, tmp)


def _missed(pos: list[Sample], scanner: Scanner, tmp: Path) -> None:
    kinds: dict[str, list[int]] = {}
    with detect_secrets_defaults():
        for s in pos:
            hits = ds_findings(s.text, tmp)
            for a, b in s.spans:
                lines = range(s.text.count("\n", 0, a) + 1, s.text.count("\n", 0, b) + 2)
                k = kinds.setdefault(s.rule_id or "?", [0, 0])
                k[0] += 1
                k[1] += any(line in lines for line, _ in hits)
    missed = sorted(r for r, (n, f) in kinds.items() if f < n)
    print(f"  detect-secrets misses some or all of: {', '.join(missed)}")


def startup(trees: dict[str, Path] | None = None, runs: int = 5) -> None:
    """Time from exec to exit of `gate scan` on a small input (wall, and the child's CPU),
    beside detect-secrets' CLI on the same file, or beside another tree's `gate scan`.
    Each command runs once untimed first, with bytecode writing on, so every command
    starts from its .pyc files as an installed one does (this machine's sessions set
    PYTHONDONTWRITEBYTECODE, which made every start compile gate from source); then the
    commands take turns, `runs` times each."""
    import statistics

    with tempfile.NamedTemporaryFile("w", suffix=".env", delete=False) as f:
        f.write("PORT=8080\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    gate = [sys.executable, "-m", "gate", "scan", f.name]
    commands: dict[str, tuple[list[str], dict[str, str]]] = {}
    if trees is None:
        bindir = Path(sys.executable).parent
        commands["gate scan"] = (gate, env)
        commands["detect-secrets scan"] = ([str(bindir / "detect-secrets"), "scan", f.name], env)
    else:
        for label, tree in trees.items():
            commands[f"gate scan ({label})"] = (gate, {**env, "PYTHONPATH": str(tree)})
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
    for i in range(runs + 1):
        order = list(commands) if i % 2 else list(commands)[::-1]
        for name in order:
            argv, child_env = commands[name]
            before = os.times()
            t0 = time.perf_counter()
            subprocess.run(
                argv, capture_output=True, check=False, cwd=tempfile.gettempdir(), env=child_env
            )
            wall = time.perf_counter() - t0
            after = os.times()
            cpu = (
                after.children_user
                - before.children_user
                + after.children_system
                - before.children_system
            )
            if i:  # the first run writes the .pyc files
                times[name].append((wall, cpu))
    print(f"\nstart-up (exec to exit, a one-line file, {runs} runs each, alternated)")
    print(f"  {'':28}{'wall p50':>10}{'wall min':>10}{'CPU p50':>10}{'CPU min':>10}")
    for name, got in times.items():
        walls, cpus = [w for w, _ in got], [c for _, c in got]
        print(
            f"  {name:28}{statistics.median(walls):>10.3f}{min(walls):>10.3f}"
            f"{statistics.median(cpus):>10.3f}{min(cpus):>10.3f}"
        )
    os.unlink(f.name)
    print(f"  target: gate scan <= 0.3 s; load average {os.getloadavg()[0]:.1f}")


# A child measuring one tree's gate/ and rules/ (this tree's corpus in both): cold CPU
# throughput (best of 5 over the chunks, fresh cache each time) and a turn's CPU (p50 of 20).
_TREE = """
import json, sys, time
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from secrets_corpus import next_turn, positives, realistic_text
from gate.screen.secrets import Scanner
size = int(sys.argv[3])
text, chunks = realistic_text(size)
scanner = Scanner()
for s in positives(1):  # every detector used once (pattern analysis), as a running gate has
    scanner.scan(s.text)
best = float("inf")
for _ in range(5):
    fresh = Scanner(scanner.detectors)
    t0 = time.thread_time()
    for c in chunks:
        fresh.scan(c)
    best = min(best, time.thread_time() - t0)
history, new = next_turn(chunks)
warm = Scanner(scanner.detectors)
for c in history:
    warm.scan(c)
turns = []
for i in range(20):
    fresh_text = new + f"\\n# turn {i}"
    t0 = time.thread_time()
    for c in (*history, fresh_text):
        warm.scan(c)
    turns.append(time.thread_time() - t0)
turns.sort()
print(json.dumps({"mbps": len(text.encode()) / 1e6 / best, "turn_ms": turns[10] * 1e3}))
"""


def trees_side_by_side(baseline: str, size: int, rounds: int, tmp: Path) -> None:
    """Cold throughput, a turn and start-up of --baseline's gate/ and rules/ beside this
    tree's, each in fresh children taking turns (A B B A ...), best of each kept: on a
    shared machine the load moves between runs more than two trees differ."""
    trees = {baseline: _extract(baseline, tmp), "this tree": REPO}
    got: dict[str, list[dict[str, float]]] = {label: [] for label in trees}
    for i in range(2 * rounds):
        label = list(trees)[(i + i // 2) % 2]
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                _TREE,
                str(trees[label]),
                str(REPO / "tests" / "screen"),
                str(size),
            ],
            capture_output=True,
            text=True,
            check=True,
        )
        got[label].append(json.loads(done.stdout.splitlines()[-1]))
    print(
        f"\n{baseline} beside this tree ({size / 1e6:.1f} MB mixed traffic, CPU time,"
        f" {rounds} children each)"
    )
    print(f"  {'':14}{'cold MB/s best':>16}{'(each child)':>28}{'turn ms p50 best':>18}")
    for label, runs in got.items():
        each = ", ".join(f"{r['mbps']:.1f}" for r in runs)
        best, turn_ms = max(r["mbps"] for r in runs), min(r["turn_ms"] for r in runs)
        print(f"  {label[:14]:14}{best:>16.1f}{each:>28}{turn_ms:>18.2f}")
    print("  targets: cold >= 100 MB/s, turn <= 1 ms")
    startup(trees)


def _extract(rev: str, tmp: Path) -> Path:
    """`git archive` of REV's gate/ and rules/ into a folder of its own."""
    base = tmp / "baseline"
    if not base.exists():
        base.mkdir()
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", rev, "gate", "rules"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(base)], input=archive, check=True)
    return base


def long_runs() -> dict[str, Callable[[int], str]]:
    """Inputs that made a regex walk the rest of a long run once per keyword or position:
    alphabets with no space, keywords repeated, keywords glued to operators; and lines of
    token characters, each of which may start a folded token."""
    rnd = random.Random(7)

    def pick(chars: str) -> Callable[[int], str]:
        return lambda n: "".join(rnd.choices(chars, k=n))

    def repeat(unit: str) -> Callable[[int], str]:
        return lambda n: (unit * (n // len(unit) + 1))[:n]

    return {
        "A * n": repeat("A"),
        "[A-Z]": pick(string.ascii_uppercase),
        "[A-Z0-9]": pick(string.ascii_uppercase + string.digits),
        "base32": pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"),
        "hex": pick("0123456789abcdef"),
        "base64, no =": pick(string.ascii_letters + string.digits + "+/"),
        "[A-Z=:]": pick(string.ascii_uppercase + "=:"),
        "[A-Z_]": pick(string.ascii_uppercase + "_"),
        "AKIA * n": repeat("AKIA"),
        "TOKEN * n": repeat("TOKEN"),
        "PASSW_ * n": repeat("PASSW_"),
        "_PASS= * n": repeat("_PASS= "),
        "cookie= * n": repeat("cookie= "),
        "KEY- * n": repeat("KEY-"),
        "token lines": lambda n: "".join(
            f"ghp_{''.join(rnd.choices(string.ascii_letters, k=72))}\n" for _ in range(n // 77 + 1)
        )[:n],
        # Short lines of one width (a narrow fold's shape) under keyword lines.
        "narrow lines": lambda n: "".join(
            ("xoxb-" if i % 3 == 0 else "".join(rnd.choices(string.ascii_letters, k=8))) + "\n"
            for i in range(n // 8 + 1)
        )[:n],
        "AKIA12 lines": repeat("AKIA12345678\n"),
    }


# Run in a fresh interpreter per cell, importing gate from the tree given, so a baseline's
# quadratic cell can be cut off at the cap without stopping the run.
_CELL = """
import sys, time
sys.path.insert(0, sys.argv[1])
from gate.screen.secrets import Scanner
text = open(sys.argv[2], encoding="utf-8").read()
scanner = Scanner(budget=1e9)  # the real cost, not the budget's cut-off
scanner.scan(text[:5000] + " warm-up")  # each detector's first use reads its pattern once
t0 = time.thread_time()
scanner.scan(text)
print(time.thread_time() - t0)
"""


def _cell(tree: Path, path: Path, cap: float) -> float | None:
    try:
        out = subprocess.run(
            [sys.executable, "-c", _CELL, str(tree), str(path)],
            capture_output=True,
            text=True,
            timeout=cap,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    return float(out.stdout)


def long(baseline: str | None, cap: float, tmp: Path) -> None:
    trees = {"this tree": REPO}
    if baseline:
        trees = {baseline: _extract(baseline, tmp), **trees}
    sizes = (10_000, 100_000, 1_000_000)
    print(f"\nlong runs: CPU seconds per scan, each cell in a fresh process, cut at {cap:.0f} s")
    head = "".join(f"{f'{n // 1000}K':>9}" for n in sizes)
    print(f"  {'':16}" + "".join(f"{name[:25]:>{9 * len(sizes) + 2}}" for name in trees))
    print(f"  {'':16}" + "".join(f"  {head}" for _ in trees))
    for label, make in long_runs().items():
        row = f"  {label:16}"
        texts = []
        for n in sizes:
            path = tmp / f"long-{n}.txt"
            path.write_text(make(n), encoding="utf-8")
            texts.append(path)
        for tree in trees.values():
            row += "  "
            slow = False
            for path in texts:
                t = None if slow else _cell(tree, path, cap)
                slow = t is None
                row += f"{'> cap' if t is None else f'{t:.3f}':>9}"
        print(row, flush=True)
    print("  linear: each column 10x the one before it (or less, start-up dominating at 10K)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=float, default=5.0, help="MB of mixed text (default 5)")
    ap.add_argument("--quick", action="store_true", help="1 MB, for a smoke run")
    ap.add_argument("--long", action="store_true", help="only the long-run classes")
    ap.add_argument(
        "--baseline",
        help="git ref measured beside this tree (cold, turn, start-up; with --long, the long runs)",
    )
    ap.add_argument("--rounds", type=int, default=3, help="children per tree with --baseline")
    ap.add_argument("--cap", type=float, default=20.0, help="seconds per long-run cell")
    args = ap.parse_args()
    if args.long:
        with tempfile.TemporaryDirectory(prefix="gate-bench-") as d:
            long(args.baseline, args.cap, Path(d))
        return
    size = int((1.0 if args.quick else args.size) * 1e6)
    if args.baseline:
        with tempfile.TemporaryDirectory(prefix="gate-bench-") as d:
            trees_side_by_side(args.baseline, min(size, 2_000_000), args.rounds, Path(d))
        return
    print(
        f"gate secret screening vs detect-secrets | Python {platform.python_version()},"
        f" {os.cpu_count()} cores, {platform.machine()}"
    )
    text, chunks = realistic_text(size)
    with tempfile.TemporaryDirectory(prefix="gate-bench-") as d:
        tmp = Path(d)
        cold(text, chunks, tmp)
        turn(chunks, tmp)
        accuracy(tmp)
    startup()


if __name__ == "__main__":
    main()
