"""What a person's confirmation of a loosened rule costs the denied-file index: a refresh
with the rules unchanged (the baseline, every few seconds) beside the one refresh after a
rule went (its file's values leave the index), with 50,000 values held.

    .venv/bin/python bench/loosen.py
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path

from loguru import logger

from gate.rules.layers import PolicyStore
from gate.screen.fingerprints import IndexStore, Limits

VALUES = 50_000
ROUNDS = 5


def _project(top: Path) -> Path:
    root = top / "project"
    (root / ".gate").mkdir(parents=True)
    (root / "data").mkdir()
    half = VALUES // 2
    for name, start in (("a.txt", 0), ("b.txt", half)):
        lines = (f"value-{i:08d}-{os.urandom(4).hex()}" for i in range(start, start + half))
        (root / "data" / name).write_text("\n".join(lines) + "\n")
    return root


def _rules(root: Path, text: str, stamp: int) -> None:
    path = root / ".gate" / "rules.yaml"
    path.write_text(text)
    os.utime(path, (stamp, stamp))


def main() -> None:
    logger.remove()  # figures only
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        os.environ.update(
            GATE_CONFIG_DIR=str(top / "config"),
            GATE_DATA_DIR=str(top / "data"),
            GATE_MANAGED_RULES=str(top / "none.yaml"),
            GATE_CLAUDE_MANAGED_DIR=str(top / "none"),
        )
        root = _project(top)
        both = "deny:\n  - Read(./data/a.txt)\n  - Read(./data/b.txt)\n"
        limits = Limits(1000, 10 << 20)
        same, after = [], []
        for n in range(ROUNDS):
            _rules(root, both, 1)
            store, indexes = PolicyStore(warn=False), IndexStore(limits)
            policy = store.policy_for(str(root))
            indexes.refresh(policy, str(root))
            t = time.perf_counter()
            full = indexes.refresh(policy, str(root))
            same.append(time.perf_counter() - t)
            _rules(root, "deny:\n  - Read(./data/b.txt)\n", 2 + n)
            store.policy_for(str(root))
            [lo] = store.loosenings()
            store.confirm(lo, approve=True)
            policy = store.policy_for(str(root))
            t = time.perf_counter()
            less = indexes.refresh(policy, str(root))
            after.append(time.perf_counter() - t)
        print(f"denied-file index refresh, {len(full)} values held, median of {ROUNDS}:")
        print(f"  rules unchanged (baseline)      {statistics.median(same) * 1000:8.1f} ms")
        print(
            f"  after a confirmed loosening     {statistics.median(after) * 1000:8.1f} ms"
            f"  ({len(full) - len(less)} values dropped)"
        )


if __name__ == "__main__":
    main()
