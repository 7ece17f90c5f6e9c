"""gate's core compiled with mypyc beside the same source as Python, in one process.

This tree must hold the compiled modules (`.so` files beside the sources: `GATE_MYPYC=1
pip install -e .` does not make them, see bench/README.md "mypyc on the hot path"); the
pure tree is `git archive HEAD` of gate/ and rules/ (no `.so`) unless `--pure DIR` names
one. Both trees are imported side by side in this process (each under the name `gate`,
swapped in sys.modules) and take turns, A B B A, so that the load of a shared machine
falls on both alike. Figures are CPU time (time.thread_time):
  cold     Scanner.scan over ~2 MB of mixed traffic's chunks, fresh cache each pass
  turn     a 2 MB conversation already scanned plus 20 KB new (as bench/scan.py's)
  screen   screen() of each turn of a growing Claude Code session (bench/latency.py's),
           each tree with its own Screens: an ordinary request's screening
  start-up `gate scan` of a one-line file, fresh processes (wall and CPU)
and whether both trees' findings and verdicts are the same. Nothing passes or fails.
Run: .venv/bin/python bench/compiled.py [--passes 21] [--size 2] [--turns 300]
"""

from __future__ import annotations

import argparse
import importlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "bench"), str(REPO / "tests" / "screen")]
from latency import Conversation  # noqa: E402
from secrets_corpus import next_turn, positives, realistic_text  # noqa: E402

MODULES = (
    "gate.screen.secrets",
    "gate.screen.request",
    "gate.screen.content",
    "gate.screen.fingerprints",
    "gate.rules.layers",
)


def load(tree: Path) -> dict[str, ModuleType]:
    """`tree`'s gate, imported afresh: the other tree's modules stay alive in the objects
    that hold them, and each module keeps its own tree's imports."""
    for name in [n for n in sys.modules if n == "gate" or n.startswith("gate.")]:
        del sys.modules[name]
    sys.path.insert(0, str(tree))
    try:
        return {name: importlib.import_module(name) for name in MODULES}
    finally:
        sys.path.remove(str(tree))


def alternated(fns: dict[str, Callable[[], Any]], passes: int) -> dict[str, list[float]]:
    """CPU ms of each fn, `passes` times, in the order A B B A ..."""
    times: dict[str, list[float]] = {name: [] for name in fns}
    for i in range(passes):
        for name in list(fns) if i % 2 == 0 else list(fns)[::-1]:
            t0 = time.thread_time()
            fns[name]()
            times[name].append((time.thread_time() - t0) * 1e3)
    return times


def show(title: str, times: dict[str, list[float]], mb: float | None = None) -> None:
    print(f"\n{title}")
    for name, got in times.items():
        best, mid = min(got), statistics.median(got)
        rate = f"  ({mb / best * 1e3:6.1f} / {mb / mid * 1e3:6.1f} MB/s)" if mb else ""
        print(f"  {name:9} best {best:8.3f} ms   median {mid:8.3f} ms{rate}")
    pure, comp = times["pure"], times["compiled"]
    pairs = [a / b for a, b in zip(pure, comp, strict=True) if b > 0]
    print(
        f"  pure / compiled: best {min(pure) / min(comp):.2f}, median of pairs"
        f" {statistics.median(pairs):.2f}"
    )


def scans(trees: dict[str, dict[str, ModuleType]], size: float, passes: int) -> None:
    text, chunks = realistic_text(int(size * 1e6))
    mb = len(text.encode()) / 1e6
    loaded = {}
    for name, mods in trees.items():
        scanner_cls = mods["gate.screen.secrets"].Scanner
        scanner = scanner_cls()
        for sample in positives(1):  # every detector's pattern analysed, as after start
            scanner_cls(scanner.detectors).scan(sample.text)
        loaded[name] = (scanner_cls, scanner.detectors)

    def found(name: str) -> list[list[tuple[Any, ...]]]:
        cls, detectors = loaded[name]
        fresh = cls(detectors)
        return [
            [(f.kind, f.rule_id, f.start, f.end, str(f.tier)) for f in fresh.scan(c)]
            for c in chunks
        ]

    same = found("pure") == found("compiled")
    print(f"\nfindings on {mb:.2f} MB ({len(chunks)} chunks) identical: {same}")

    def cold(name: str) -> Callable[[], None]:
        cls, detectors = loaded[name]

        def run() -> None:
            fresh = cls(detectors)
            for c in chunks:
                fresh.scan(c)

        return run

    show(f"cold scan, {passes} passes each", alternated({n: cold(n) for n in loaded}, passes), mb)

    history, new = next_turn(chunks)
    warm = {}
    for name, (cls, detectors) in loaded.items():
        warm[name] = cls(detectors)
        for c in history:
            warm[name].scan(c)
    count = iter(range(10**9))

    def turn(name: str) -> Callable[[], None]:
        def run() -> None:
            fresh = new + f"\n# turn {next(count)}"
            for c in (*history, fresh):
                warm[name].scan(c)

        return run

    show(
        f"next turn: {sum(map(len, history)) / 1e6:.1f} MB seen + 20 KB new, {passes} passes each",
        alternated({n: turn(n) for n in loaded}, passes),
    )


def screens(trees: dict[str, dict[str, ModuleType]], size: int, turns: int, root: Path) -> None:
    from loguru import logger

    logger.remove()
    project = root / "project"
    (project / "src").mkdir(parents=True)
    (project / ".env").write_text("DATABASE_URL=postgres://app:s3cr3t-pw@db.internal/app\n")
    data = root / "data"  # one key: both trees' fingerprints and redactions compare
    data.mkdir(mode=0o700)
    state = {}
    for name, mods in trees.items():
        request = mods["gate.screen.request"]
        kept = request.Screens(
            mods["gate.screen.fingerprints"].IndexStore(),
            mods["gate.screen.content"].SecretScreen.load(data),
        )
        state[name] = (request, mods["gate.rules.layers"].PolicyStore(), kept)
    times: dict[str, list[float]] = {name: [] for name in trees}
    verdicts: dict[str, list[Any]] = {name: [] for name in trees}
    bodies = Conversation(project).turns(size)
    for i, (_, body) in enumerate(zip(range(turns), bodies, strict=False)):
        for name in list(state) if i % 2 == 0 else list(state)[::-1]:
            request, policies, kept = state[name]
            req = request.Outbound(path="/v1/messages", body=body, agent=None, project_root=None)
            t0 = time.thread_time()
            verdict = request.screen(req, policies, kept)
            times[name].append((time.thread_time() - t0) * 1e3)
            verdicts[name].append((verdict.body, [repr(w) for w in verdict.withheld]))
    same = verdicts["pure"] == verdicts["compiled"]
    firsts = {name: got[0] for name, got in times.items()}
    print(
        f"\nscreen() of a Claude Code session from {size // 1000} KB, {turns} turns,"
        f" verdicts identical: {same}; the first body: "
        + ", ".join(f"{n} {t:.1f} ms" for n, t in firsts.items())
    )
    show("next turns (2..n)", {name: got[1:] for name, got in times.items()})


def startup(trees: dict[str, Path], runs: int) -> None:
    """`gate scan` of a one-line file in fresh processes, each tree on PYTHONPATH; every
    command runs once untimed first, writing its .pyc files, as bench/scan.py's does."""
    with tempfile.NamedTemporaryFile("w", suffix=".env", delete=False) as f:
        f.write("PORT=8080\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    argv = [sys.executable, "-m", "gate", "scan", f.name]
    got: dict[str, list[tuple[float, float]]] = {name: [] for name in trees}
    for i in range(runs + 1):
        for name in list(trees) if i % 2 == 0 else list(trees)[::-1]:
            before = os.times()
            t0 = time.perf_counter()
            subprocess.run(
                argv,
                capture_output=True,
                check=False,
                cwd=tempfile.gettempdir(),
                env={**env, "PYTHONPATH": str(trees[name])},
            )
            wall = time.perf_counter() - t0
            after = os.times()
            cpu = after.children_user - before.children_user
            cpu += after.children_system - before.children_system
            if i:
                got[name].append((wall, cpu))
    os.unlink(f.name)
    print(f"\n`gate scan` start-up, a one-line file, {runs} runs each, alternated (s)")
    print(f"  {'':9}{'wall p50':>10}{'wall min':>10}{'CPU p50':>10}{'CPU min':>10}")
    for name, pairs in got.items():
        walls, cpus = [w for w, _ in pairs], [c for _, c in pairs]
        print(
            f"  {name:9}{statistics.median(walls):>10.3f}{min(walls):>10.3f}"
            f"{statistics.median(cpus):>10.3f}{min(cpus):>10.3f}"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    ap.add_argument("--pure", metavar="DIR", help="a tree of the same source, uncompiled")
    ap.add_argument("--size", type=float, default=2.0, help="MB of mixed text (default 2)")
    ap.add_argument("--passes", type=int, default=21, help="scan passes per tree")
    ap.add_argument("--session", type=int, default=66_000, help="first body's bytes")
    ap.add_argument("--turns", type=int, default=300, help="screened turns per tree")
    ap.add_argument("--runs", type=int, default=10, help="`gate scan` starts per tree")
    ap.add_argument("--only", default="scan,screen,startup", help="sections to run")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        pure = Path(args.pure) if args.pure else root / "pure"
        if not args.pure:
            pure.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(REPO), "archive", "HEAD", "gate", "rules"],
                capture_output=True,
                check=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(pure)], input=archive, check=True)
        trees = {"pure": load(pure), "compiled": load(REPO)}
        where = {n: Path(m["gate.screen.secrets"].__file__ or "").name for n, m in trees.items()}
        if not where["compiled"].endswith(".so"):
            sys.exit(f"this tree is not compiled ({where['compiled']}): build it first")
        print(f"pure: {pure}; compiled: {where['compiled']}")
        sections = args.only.split(",")
        if "scan" in sections:
            scans(trees, args.size, args.passes)
        if "screen" in sections:
            screens(trees, args.session, args.turns, root)
        if "startup" in sections:
            startup({"pure": pure, "compiled": REPO}, args.runs)
        print(f"\nload average {' '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
