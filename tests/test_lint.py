"""The code base stays clean: ruff check (incl. bandit rules), ruff format, mypy --strict."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(*cmd: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


def test_ruff() -> None:
    proc = _run(str(BIN / "ruff"), "check", "--output-format", "concise", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ruff_format() -> None:
    proc = _run(str(BIN / "ruff"), "format", "--check", ".")
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_mypy_strict() -> None:
    proc = _run(str(BIN / "mypy"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
