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
Targets (issue 14): recall >= 0.95, high >= 0.90 on distinctive formats, FP <= 0.05.
Run: .venv/bin/python bench/recall.py [--only gitleaks] [--missed 20] [--no-ds]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from examples import SOURCES, Example, from_source
from scan import detect_secrets_defaults, ds_findings

from gate.screen.secrets import Scanner, Tier

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
    c: Counter[str] = Counter()
    missed: Counter[str] = Counter()
    for e in examples:
        found = scanner.scan(e.text)
        high = any(f.tier is Tier.HIGH for f in found)
        ds = bool(ds_findings(e.text, tmp)) if tmp else False
        if e.positive:
            c["tp"] += 1
            c["found"] += bool(found)
            c["ds"] += ds
            missed[e.rule] += not found
            if e.distinctive:
                c["sharp"] += 1
                c["sharp_high"] += high
                # A GitHub/npm-format token whose generated body fails the CRC32: low by design.
                c["sharp_crc"] += (
                    bool(found) and not high and all(crc.get(f.rule_id) for f in found)
                )
                missed[e.rule] += bool(found) and not high
        else:
            c["fp"] += 1
            c["flag"] += bool(found)
            c["flag_high"] += high
            c["ds_flag"] += ds
    measure.missed = missed  # type: ignore[attr-defined]
    return {k: float(v) for k, v in c.items()}


def ratio(a: float, b: float) -> str:
    return f"{a / b:.3f}" if b else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=Path, default=DEFAULT_SOURCES)
    ap.add_argument("--fetch", action="store_true", help="clone missing sources from GitHub")
    ap.add_argument("--only", action="append", choices=sorted(SOURCES))
    ap.add_argument("--missed", type=int, default=0, help="list the N rules missed most")
    ap.add_argument("--no-ds", action="store_true", help="skip detect-secrets (slow)")
    args = ap.parse_args()
    scanner = Scanner()
    header = (
        f"{'source':12}{'rules':>6}{'TPs':>7}{'recall':>8}{'ds':>7}{'sharp':>7}"
        f"{'high':>7}{'high*':>7}{'FPs':>6}{'FP':>7}{'FP high':>8}{'ds FP':>7}"
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
                f"{r.get('fp', 0):>6.0f}{ratio(r.get('flag', 0), r.get('fp', 0)):>7}"
                f"{ratio(r.get('flag_high', 0), r.get('fp', 0)):>8}{ds_fp:>7}"
                f"   ({skipped} unreadable, {time.perf_counter() - t0:.1f} s)"
            )
            if args.missed:
                top = measure.missed.most_common(args.missed)  # type: ignore[attr-defined]
                print("  missed most: " + ", ".join(f"{k} {v}" for k, v in top if v))


if __name__ == "__main__":
    main()
