"""docs/detectors.md, generated from the shipped detectors: `python -m gate.screen.catalog`."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from gate.screen.detectors import Detector, load_detectors, secrets_dir

HEAD = """# Secret detectors

Every detector gate ships, generated from `rules/secrets/*.yaml` by
`python -m gate.screen.catalog > docs/detectors.md` (a test fails when this page is stale).
Ids and kinds are public: the audit, `gate scan` output, SARIF and baselines carry them, and
they are never renamed. **high**-tier findings ask a person; **low**-tier ones are redacted.

| id | kind | tier | what it matches | format |
|---|---|---|---|---|
"""


def describe(det: Detector, sources: dict[str, list[str]]) -> str:
    """The comment block written above the detector's entry."""
    name, _, line = det.where.rpartition(":")
    lines = sources.get(name)
    if lines is None:
        return ""
    out: list[str] = []
    i = int(line) - 2
    while i >= 0 and lines[i].strip().startswith("#"):
        out.insert(0, lines[i].strip().lstrip("#").strip())
        i -= 1
    return " ".join(out)


def markdown(detectors: Sequence[Detector] | None = None, directory: Path | None = None) -> str:
    detectors = load_detectors() if detectors is None else detectors
    directory = directory or secrets_dir()
    sources = {
        f"rules/secrets/{p.name}": p.read_text(encoding="utf-8").splitlines()
        for p in sorted(directory.glob("*.yaml"))
    }
    rows = []
    for det in sorted(detectors, key=lambda d: d.id):
        what = describe(det, sources).replace("|", "\\|") or "-"
        rows.append(f"| `{det.id}` | `{det.kind}` | {det.tier} | {what} | [docs]({det.docs}) |")
    return HEAD + "\n".join(rows) + f"\n\n{len(rows)} detectors.\n"


if __name__ == "__main__":
    sys.stdout.write(markdown())
