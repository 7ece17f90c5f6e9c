"""docs/detectors.md lists every shipped detector and is regenerated when they change."""

from __future__ import annotations

from pathlib import Path

from gate.screen.catalog import markdown
from gate.screen.detectors import load_detectors

PAGE = Path(__file__).resolve().parents[2] / "docs" / "detectors.md"


def test_the_detectors_page_is_up_to_date() -> None:
    assert PAGE.read_text(encoding="utf-8") == markdown(), (
        "docs/detectors.md is stale: python -m gate.screen.catalog > docs/detectors.md"
    )


def test_every_detector_has_a_row_with_its_description_and_docs() -> None:
    page = markdown()
    for det in load_detectors():
        row = next(line for line in page.splitlines() if line.startswith(f"| `{det.id}` |"))
        assert f"`{det.kind}`" in row and f"| {det.tier} |" in row and det.docs in row
        assert "| - |" not in row, f"{det.where}: write a comment above the entry"
