"""CPU gate spends screening each turn of a growing session, per wire format, in-process.

The session is bench/latency.py's (a Claude Code session grown to `--size`, then one short
call per turn), converted to each format. Each turn's body is screened once, in order, as
a gate sees them, by one Screens kept across turns; the figure is the thread's CPU time
(time.thread_time), which other processes on a shared machine barely move. With
`--baseline DIR` (a source tree of an earlier commit, say `git archive main | tar -x -C
DIR`), that tree runs the same session in its own child process, rounds interleaved
(A B A B...), and both are printed side by side. Each tree screens as its own gate does: a
tree from before the one engine (one with `Screens.turns`, the Anthropic next-turn path
deleted in issue 16) runs `anthropic` through that path, and `anthropic-one` through its
one engine alone (`Screens(turns=None)`); in a tree without it the two are the same. Run:
.venv/bin/python bench/screen_turns.py [--format all] [--size 500000] [--baseline DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def child(fmt: str, size: int, turns: int, root: Path) -> list[float]:
    """Screen `turns` turns of the session in `fmt`; each turn's CPU ms (the first is the
    body seen for the first time)."""
    sys.path.insert(0, str(REPO / "bench"))
    from latency import Conversation
    from latency_formats import FORMAT, convert
    from loguru import logger

    from gate.rules.layers import PolicyStore
    from gate.screen.content import SecretScreen
    from gate.screen.fingerprints import IndexStore
    from gate.screen.request import Outbound, Screens, screen

    logger.remove()
    project = root / "project"
    (project / "src").mkdir(parents=True)
    (project / ".env").write_text("DATABASE_URL=postgres://app:s3cr3t-pw@db.internal/app\n")
    data = root / "data"
    data.mkdir(mode=0o700)
    policies = PolicyStore()
    # `anthropic-one`: Anthropic bodies through the one engine alone (a tree from before
    # issue 16 that still has the next-turn path, Screens.turns, is run without it).
    one = fmt.endswith("-one")
    fmt = fmt.removesuffix("-one")
    kw: dict[str, Any] = {"turns": None} if one and "turns" in Screens.__dataclass_fields__ else {}
    screens = Screens(IndexStore(), SecretScreen.load(data), **kw)
    bodies = Conversation(project).turns(size)
    out = []
    for _, raw in zip(range(turns), bodies, strict=False):
        body = convert(raw, fmt)
        req = Outbound(
            path=FORMAT[fmt].gate_path.split("?")[0], body=body, agent=None, project_root=None
        )
        t0 = time.thread_time()
        screen(req, policies, screens)
        out.append((time.thread_time() - t0) * 1000)
    return out


def run_tree(tree: Path, fmt: str, size: int, turns: int) -> list[float]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "PYTHONPATH": str(tree), "GATE_DATA_DIR": tmp}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--child", fmt]
        cmd += ["--size", str(size), "--turns", str(turns), "--tmp", tmp]
        proc = subprocess.run(
            cmd,
            env=env,
            capture_output=True,
            text=True,
            cwd=tree,
            check=True,
        )
    ms: list[float] = json.loads(proc.stdout.strip().splitlines()[-1])
    return ms


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    ap.add_argument(
        "--format",
        default="all",
        help="anthropic,anthropic-one,chat,responses,gemini or all (the four formats;"
        " anthropic-one: Anthropic through an older tree's one engine, without its next-turn"
        " path)",
    )
    ap.add_argument("--size", type=int, default=500_000, help="bytes of the first body")
    ap.add_argument("--turns", type=int, default=40, help="turns per session")
    ap.add_argument("--rounds", type=int, default=2, help="sessions per tree, interleaved")
    ap.add_argument("--baseline", metavar="DIR", help="a source tree to run beside this one")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--tmp", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.size, args.turns, Path(args.tmp))))
        return
    formats = ["anthropic", "chat", "responses", "gemini"]
    formats = formats if args.format == "all" else args.format.split(",")
    trees = {"this": REPO, **({"baseline": Path(args.baseline)} if args.baseline else {})}
    print(
        f"CPU ms per screened turn, {args.size} B session, {args.turns} turns, best of"
        f" {args.rounds} rounds (first: the first body; next: median of turns 2..n)"
    )
    print(
        f"{'format':>13} | " + " | ".join(f"{t + ' first':>15} | {t + ' next':>14}" for t in trees)
    )
    for fmt in formats:
        got: dict[str, list[list[float]]] = {t: [] for t in trees}
        for r in range(args.rounds):
            for name in trees if r % 2 == 0 else reversed(trees):
                got[name].append(run_tree(trees[name], fmt, args.size, args.turns))
        cells = []
        for name in trees:
            runs = got[name]
            first = min(x[0] for x in runs)
            nxt = min(statistics.median(x[1:]) for x in runs)
            cells.append(f"{first:15.2f} | {nxt:14.2f}")
        print(f"{fmt:>13} | " + " | ".join(cells))


if __name__ == "__main__":
    main()
