"""How often each detector's entropy floor rejects real random tokens of its own format.

A detector with `entropy: F` drops a match whose value (the `secret` group, prefix
included) has less Shannon entropy than F bits per character. A random token can fall
under the floor by chance: AWS's 3.0 rejected about one real access key id in 7,400.
For every detector with a floor, each alternative of its `secret` group is generated
(bench/examples.py: uniform over each character class, so as an issuer's random body)
and the rate of values under the floor is measured, beside a normal estimate of the
tail (the count is too small to read rates near 1e-5 from a sample) and the floor that
would reject fewer than one in 100,000.

Run: .venv/bin/python bench/entropy_floors.py [--samples 20000] [--all] [--only ID]
Lists the formats whose rate (measured or estimated) is above --max-rate (default 1e-5);
--all lists every format.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from re import _constants as C
from re import _parser as sre
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from examples import _class

from gate.screen import checks
from gate.screen.detectors import load_detectors


def _secret_tree(pattern: str, group: int) -> sre.SubPattern | None:
    """The parsed `secret` group of a pattern."""

    def walk(items: object) -> sre.SubPattern | None:
        for op, av in items:  # type: ignore[attr-defined]
            if op is C.SUBPATTERN:
                if av[0] == group:
                    return av[-1]  # type: ignore[no-any-return]
                if found := walk(av[-1]):
                    return found
            elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
                if found := walk(av[2]):
                    return found
            elif op is C.BRANCH:
                for b in av[1]:
                    if found := walk(b):
                        return found
            elif op is C.ATOMIC_GROUP and (found := walk(av)):
                return found
        return None

    return walk(sre.parse(pattern))


def alternatives(tree: sre.SubPattern) -> list[sre.SubPattern]:
    """The top-level alternatives of a group (`(?:A|B)` or `A|B`), else the group."""
    items = list(tree)
    if len(items) == 1 and items[0][0] is C.SUBPATTERN:
        inner = items[0][1][-1]
        if len(list(inner)) == 1 and next(iter(inner))[0] is C.BRANCH:
            items = list(inner)
    if len(items) == 1 and items[0][0] is C.BRANCH:
        return list(items[0][1][1])
    return [tree]


def flatten(tree: sre.SubPattern) -> list[list[tuple[str, int]]]:
    """The shapes of a group, each as runs of (alphabet, count), a position drawn uniformly
    from its alphabet: one per choice of its inner alternatives (`(?:AKIA|ASIA)`), a
    repeat at its shortest (the worst case for a floor). ValueError past 64 shapes."""
    shapes: list[list[tuple[str, int]]] = [[]]
    for op, av in tree:  # type: ignore[attr-defined]
        if op is C.LITERAL:
            parts = [[(chr(av), 1)]]  # type: ignore[arg-type]
        elif op is C.IN:
            parts = [[("".join(_class(av)), 1)]]  # type: ignore[arg-type]
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, _, sub = av  # type: ignore[misc]
            inner = flatten(sub)
            if len(inner) != 1 and lo > 1:
                raise ValueError("a repeated alternative")
            parts = [x * lo for x in inner]
        elif op is C.SUBPATTERN:
            parts = flatten(av[-1])  # type: ignore[index]
        elif op is C.BRANCH:
            parts = [x for b in av[1] for x in flatten(b)]  # type: ignore[index]
        elif op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            continue
        else:
            raise ValueError(f"{op} in the group")
        shapes = [s + p for s in shapes for p in parts]
        if len(shapes) > 64:
            raise ValueError("too many shapes")
    return shapes


def sampler(runs: list[tuple[str, int]], rng: random.Random) -> Callable[[], str]:
    merged: list[tuple[str, int]] = []
    for alphabet, n in runs:
        if merged and merged[-1][0] == alphabet:
            merged[-1] = (alphabet, merged[-1][1] + n)
        else:
            merged.append((alphabet, n))
    choices = rng.choices
    return lambda: "".join(a * n if len(a) == 1 else "".join(choices(a, k=n)) for a, n in merged)


def measure(
    tree: sre.SubPattern, floor: float, n: int, deep: int, rng: random.Random
) -> dict[str, Any]:
    """Entropy of `n` random values of each shape of the group, and when the floor is
    within 8 standard deviations of the mean, of `deep` more, counting those under it;
    the shape whose values fall under the floor most."""
    worst: dict[str, Any] = {}
    for runs in flatten(tree):
        r = _measure(runs, floor, n, deep, rng)
        if not worst or (r["rate"], -r["q"]) > (worst["rate"], -worst["q"]):
            worst = r
    return worst


def _measure(
    runs: list[tuple[str, int]], floor: float, n: int, deep: int, rng: random.Random
) -> dict[str, Any]:
    draw = sampler(runs, rng)
    es = [checks.entropy(draw()) for _ in range(n)]
    mean, sd = statistics.fmean(es), statistics.pstdev(es)
    below, total = sum(e < floor for e in es), n
    lowest = sorted(es)[: max(1, n // 100_000)]
    if deep and sd and (mean - floor) / sd < 8:
        entropy = checks.entropy
        big = [entropy(draw()) for _ in range(deep)]
        below += sum(e < floor for e in big)
        total += deep
        lowest = sorted(big)[: max(1, deep // 100_000)]
    return {
        "length": sum(k for _, k in runs),
        "mean": mean,
        "sd": sd,
        "min": min(es),
        "rate": below / total,
        "n": total,
        "q": lowest[-1],  # the 1e-5 quantile (of the larger sample)
        "sample": draw(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--samples", type=int, default=20_000)
    ap.add_argument("--deep", type=int, default=1_000_000, help="more samples near the floor")
    ap.add_argument("--max-rate", type=float, default=1e-5)
    ap.add_argument("--all", action="store_true")
    ap.add_argument("--only", action="append")
    args = ap.parse_args()
    rng = random.Random(14)
    print(
        f"{'detector':40}{'alt':>4}{'len':>6}{'floor':>6}{'mean':>6}{'sd':>6}{'min':>6}"
        f"{'rate':>9}{'of':>9}{'1e-5 q':>8}",
        flush=True,
    )
    for d in load_detectors():
        if not d.entropy or (args.only and d.id not in args.only):
            continue
        for p in d.patterns:
            group = p.groupindex.get("secret")
            tree = _secret_tree(p.pattern, group) if group else None
            if tree is None:
                continue
            for i, alt in enumerate(alternatives(tree)):
                try:
                    r = measure(alt, d.entropy, args.samples, args.deep, rng)
                except ValueError as exc:
                    print(f"{d.id:40}{i:>4}  (not measured: {exc})", flush=True)
                    continue
                if not args.all and r["rate"] <= args.max_rate:
                    continue
                lo, hi = alt.getwidth()
                print(
                    f"{d.id:40}{i:>4}{r['length']:>5}{'' if lo == hi else '+':1}"
                    f"{d.entropy:>6.2f}{r['mean']:>6.2f}{r['sd']:>6.2f}{r['min']:>6.2f}{r['rate']:>9.1e}{r['n']:>9.0e}"
                    f"{r['q']:>8.2f}  {r['sample'][:50]}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
