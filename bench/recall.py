"""Recall and false positives on other scanners' published examples: gate beside detect-secrets.

The examples are read at run time from the scanners' own repositories (gitleaks' and
betterleaks' rule `tps`/`fps`, kingfisher's rule `examples`, trufflehog's detector pattern
tests), kept in a cache outside gate's repository (--sources, default
~/.cache/gate-bench/sources, one `OWNER+NAME/repo` git directory each; --fetch clones what
is missing). Per source it prints:
  recall      true positives with any finding (detect-secrets: any finding in the example)
  high        true positives with a high-tier finding, over the rules whose secret has a
              fixed prefix of 3+ characters (the formats gate should ask about); high*
              leaves out GitHub/npm-format examples whose random body fails the format's
              CRC32 (gate keeps those low on purpose: a real token's checksum holds)
  FP          false-positive examples with any finding; FP high: with a high-tier one
  held        negatives set aside: another rule of the same scanner whose secret has a
              fixed prefix of 3+ characters matches the text (its regex run here), so the
              text holds that vendor's token (one rule's negative example is a sibling
              rule's key: `sgp_...` under Segment) and the scanner itself reports it
  other       of FP: examples another vendor rule of the same scanner matches (its regex
              run here; generic rules left out, prefixed ones held): counted in FP
              (trufflehog's rules are Go code, so it has no such column: -)
  stand       examples set aside whichever their label: their value is a stand-in
              (`abcdefghij...`, `1234567890...`, the RFC 4122 sample UUID, one letter or
              digit twenty times), written as a true positive of one rule and a false positive
              of another (examples.py: Example.stand_in)
Components that a scanner never reports alone (betterleaks' `SkipReport`, kingfisher's
`visible: false`: host names, tenant ids) are not read: their examples are not secrets.
  names       of FP: examples only gate's name-based rules flagged (generic.assignment,
              generic.keyword-value...): a random value under a secret's name that fails
              the vendor rule's shape, which gate redacts (low tier) but never asks about
Targets (issue 14): recall >= 0.95, high >= 0.90 on distinctive formats, FP <= 0.05.
Run: .venv/bin/python bench/recall.py [--only gitleaks] [--missed 20] [--no-ds]
`--baseline REV` measures REV's gate/ and rules/ (extracted with `git archive`) beside this
tree's, each in a child process, on the same examples, and adds cold scan throughput (CPU,
best of 5, ~2 MB of mixed agent traffic from tests/screen/secrets_corpus.py).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
sys.path.insert(0, str(BENCH))
if "--tree" in sys.argv:  # a child measuring another revision's gate/ and rules/ (--baseline)
    sys.path.insert(0, sys.argv[sys.argv.index("--tree") + 1])
from examples import SOURCES, Example, from_source  # noqa: E402

from gate.screen.secrets import Scanner, Tier  # noqa: E402

DEFAULT_SOURCES = (
    Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "gate-bench" / "sources"
)


def repo_dir(sources: Path, name: str, fetch: bool) -> Path | None:
    github = SOURCES[name][0]
    path = sources / github.replace("/", "+") / "repo"
    if not path.is_dir() and fetch:
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            ["git", "clone", "--bare", "--depth", "1", f"https://github.com/{github}", str(path)],
            check=True,
        )
    return path if path.is_dir() else None


def measure(examples: list[Example], scanner: Scanner, tmp: Path | None) -> dict[str, float]:
    crc = {d.id: d.check == "crc32" for d in scanner.detectors}
    generic = {d.id for d in scanner.detectors if d.generic}
    if tmp is not None:
        from scan import ds_findings  # scan.py puts this tree's gate first on sys.path
    c: Counter[str] = Counter()
    missed: Counter[str] = Counter()
    for e in examples:
        if e.stand_in:  # examples.py: a stand-in value, whichever its label
            c["stand_in"] += 1
            continue
        found = scanner.scan(e.text)
        high = any(f.tier is Tier.HIGH for f in found)
        ds = bool(ds_findings(e.text, tmp)) if tmp else False
        if e.positive:
            c["tp"] += 1
            c["found"] += bool(found)
            c["ds"] += ds
            c["any_high"] += high
            missed[e.rule] += not found
            if e.distinctive:
                c["sharp"] += 1
                c["sharp_high"] += high
                # A GitHub/npm-format token whose generated body fails the CRC32: low by design.
                c["sharp_crc"] += (
                    bool(found) and not high and all(crc.get(f.rule_id) for f in found)
                )
                missed[e.rule] += bool(found) and not high
        elif e.other_sharp:
            # A negative of one rule that holds a token of another vendor's distinctive
            # format (examples.py): the scanner itself reports this text, so it is no
            # negative of the text. Set aside, counted in `held`.
            c["held"] += 1
        else:
            c["fp"] += 1
            c["flag"] += bool(found)
            c["flag_high"] += high
            # Of those flagged: another rule of that scanner matches the text (the example
            # holds that other vendor's token), or only gate's name rules fired.
            c["fp_ruled"] += e.other_rule is not None
            c["flag_other"] += bool(found) and bool(e.other_rule)
            c["flag_generic"] += bool(found) and all(f.rule_id in generic for f in found)
            c["ds_flag"] += ds
    measure.missed = missed  # type: ignore[attr-defined]
    return {k: float(v) for k, v in c.items()}


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "-"


def throughput(scanner: Scanner, size: int = 2_000_000) -> float:
    """Cold MB/s (CPU) scanning fresh chunks of mixed agent traffic, best of 5."""
    sys.path[:0] = [str(REPO / "tests"), str(REPO / "tests" / "screen")]
    from secrets_corpus import positives, realistic_text

    text, chunks = realistic_text(size)
    for s in positives(1):  # every detector used once (pattern analysis), as a running gate has
        scanner.scan(s.text)
    best = float("inf")
    for _ in range(5):
        fresh = Scanner(scanner.detectors)
        t0 = time.process_time()
        for c in chunks:
            fresh.scan(c)
        best = min(best, time.process_time() - t0)
    return len(text.encode()) / 1e6 / best


def child(args: argparse.Namespace) -> None:
    scanner = Scanner()
    out: dict[str, object] = {"detectors": len(scanner.detectors)}
    if args.mbps_only:
        print(json.dumps({"mbps": throughput(scanner)}))
        return
    for name in args.only or list(SOURCES):
        repo = repo_dir(args.sources, name, False)
        if repo is not None:
            out[name] = measure(from_source(name, repo)[0], scanner, None)
    print(json.dumps(out))


def compare(args: argparse.Namespace) -> None:
    """This tree beside --baseline REV, each measured in its own child process."""
    with tempfile.TemporaryDirectory(prefix="gate-recall-base-") as d:
        archive = subprocess.run(
            ["git", "-C", str(REPO), "archive", args.baseline, "gate", "rules"],
            capture_output=True,
            check=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", d], input=archive, check=True)
        argv = [sys.executable, __file__, "--child", "--sources", str(args.sources)]
        for name in args.only or []:
            argv += ["--only", name]
        trees = {args.baseline: d, "this tree": str(REPO)}
        runs: dict[str, dict[str, Any]] = {}
        for label, tree in trees.items():
            runs[label] = _run([*argv, "--tree", tree], label)
        # Throughput in alternating children, three each, best kept: on a shared machine
        # the load moves between runs more than the two trees differ.
        mbps: dict[str, list[float]] = {label: [] for label in trees}
        for i in range(6):
            label = list(trees)[(i + i // 2) % 2]  # A B B A A B
            mbps[label].append(_run([*argv, "--tree", trees[label], "--mbps-only"], label)["mbps"])
    print(f"{'':14}" + "".join(f"{label:>42}" for label in runs))
    cols = ("recall", "high", "TP high", "FP", "FP high")
    print(f"{'source':14}" + "".join("".join(f"{c:>8}" for c in cols) + "  " for _ in runs))
    for name in args.only or list(SOURCES):
        row = f"{name:14}"
        for r in runs.values():
            m = r.get(name)
            if m is None:
                row += f"{'(no source)':>42}"
                continue
            row += (
                f"{ratio(m.get('found', 0), m.get('tp', 0)):>8}"
                f"{ratio(m.get('sharp_high', 0), m.get('sharp', 0)):>8}"
                f"{ratio(m.get('any_high', 0), m.get('tp', 0)):>8}"
                f"{ratio(m.get('flag', 0), m.get('fp', 0)):>8}"
                f"{ratio(m.get('flag_high', 0), m.get('fp', 0)):>8}  "
            )
        print(row)
    print("high: distinctive formats found at high tier; TP high: every true positive")
    print(f"{'detectors':14}" + "".join(f"{r['detectors']:>42}" for r in runs.values()))
    print(
        f"{'cold MB/s':14}"
        + "".join(f"{max(v):>28.1f} (of {', '.join(f'{x:.0f}' for x in v)})" for v in mbps.values())
    )


def _run(argv: list[str], label: str) -> dict[str, Any]:
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"{label}: {done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=Path, default=DEFAULT_SOURCES)
    ap.add_argument("--fetch", action="store_true", help="clone missing sources from GitHub")
    ap.add_argument("--only", action="append", choices=sorted(SOURCES))
    ap.add_argument("--missed", type=int, default=0, help="list the N rules missed most")
    ap.add_argument("--no-ds", action="store_true", help="skip detect-secrets (slow)")
    ap.add_argument("--baseline", metavar="REV", help="measure REV beside this tree (no ds)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tree", help=argparse.SUPPRESS)
    ap.add_argument("--mbps-only", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    if args.baseline:
        return compare(args)
    from scan import detect_secrets_defaults

    scanner = Scanner()
    header = (
        f"{'source':12}{'rules':>6}{'TPs':>7}{'recall':>8}{'ds':>7}{'sharp':>7}"
        f"{'high':>7}{'high*':>7}{'FPs':>6}{'held':>6}{'stand':>6}{'FP':>7}{'FP high':>8}"
        f"{'other':>7}{'names':>7}"
        f"{'ds FP':>7}"
    )
    print(header)
    with tempfile.TemporaryDirectory(prefix="gate-recall-") as d, detect_secrets_defaults():
        for name in args.only or list(SOURCES):
            repo = repo_dir(args.sources, name, args.fetch)
            if repo is None:
                print(f"{name:12} not in {args.sources} (run with --fetch)")
                continue
            examples, skipped = from_source(name, repo)
            t0 = time.perf_counter()
            r = measure(examples, scanner, None if args.no_ds else Path(d))
            ds = "-" if args.no_ds else ratio(r.get("ds", 0), r.get("tp", 0))
            ds_fp = "-" if args.no_ds else ratio(r.get("ds_flag", 0), r.get("fp", 0))
            print(
                f"{name:12}{len({e.rule for e in examples}):>6}{r.get('tp', 0):>7.0f}"
                f"{ratio(r.get('found', 0), r.get('tp', 0)):>8}{ds:>7}"
                f"{r.get('sharp', 0):>7.0f}{ratio(r.get('sharp_high', 0), r.get('sharp', 0)):>7}"
                f"{ratio(r.get('sharp_high', 0), r.get('sharp', 0) - r.get('sharp_crc', 0)):>7}"
                f"{r.get('fp', 0):>6.0f}{r.get('held', 0):>6.0f}{r.get('stand_in', 0):>6.0f}"
                f"{ratio(r.get('flag', 0), r.get('fp', 0)):>7}"
                f"{ratio(r.get('flag_high', 0), r.get('fp', 0)):>8}"
                f"{ratio(r.get('flag_other', 0), r.get('fp_ruled', 0)):>7}"
                f"{ratio(r.get('flag_generic', 0), r.get('fp', 0)):>7}{ds_fp:>7}"
                f"   ({skipped} unreadable, {time.perf_counter() - t0:.1f} s)"
            )
            if args.missed:
                top = measure.missed.most_common(args.missed)  # type: ignore[attr-defined]
                print("  missed most: " + ", ".join(f"{k} {v}" for k, v in top if v))


if __name__ == "__main__":
    main()
