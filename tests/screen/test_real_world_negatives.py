"""Real harmless text agents send, on which the high tier must find nothing: minified JS
and wheel RECORDs (sha256 lockfile-style lines) from the installed packages, this
repository's git log, and the real agent request bodies of the corpus (Claude Code's XML
tags, Codex's environment context, UUID-heavy ids)."""

from __future__ import annotations

import subprocess
import sysconfig
from pathlib import Path

import pytest

from gate.screen.secrets import Scanner

SITE = Path(sysconfig.get_paths()["purelib"])
REPO = Path(__file__).resolve().parents[2]


def harmless_texts() -> list[tuple[str, str]]:
    out = [
        (str(p), p.read_text("utf-8", "replace"))
        for p in sorted((SITE / "mitmproxy" / "tools" / "web" / "static").glob("*.js"))
    ]
    out += [
        (str(p), p.read_text("utf-8", "replace")) for p in sorted(SITE.glob("*.dist-info/RECORD"))
    ]
    corpus = sorted((REPO / "tests" / "corpus").rglob("*.json"))
    out += [(str(p), p.read_text("utf-8")) for p in corpus]
    log = subprocess.run(
        ["git", "log", "--stat", "-n", "300"], cwd=REPO, capture_output=True, text=True, check=False
    ).stdout
    out.append(("git log", log))
    return out


def test_the_high_tier_finds_nothing_in_real_harmless_text() -> None:
    texts = harmless_texts()
    assert sum(len(t) for _, t in texts) > 2_000_000  # a real amount of text, not a sample
    scanner = Scanner()
    high = [(name, f.kind) for name, text in texts for f in scanner.scan(text) if f.tier == "high"]
    if not any(name.endswith(".js") for name, _ in texts):
        pytest.skip("mitmproxy's web assets are not installed")
    assert high == []
