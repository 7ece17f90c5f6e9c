"""Shared pieces of the history tests: a planted home, the CLI, and reading stores back."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from gate.cli import cli


def invoke(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def scan_json(home: Path, *extra: str) -> tuple[int, dict[str, Any]]:
    code, out, err = invoke("history", "scan", "--home", str(home), "--json", *extra)
    assert code in (0, 1), err
    return code, json.loads(out)


def tree(top: Path) -> dict[str, str]:
    """Every file under `top` by its sha256: what restore must bring back exactly."""
    return {
        str(p.relative_to(top)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(top.rglob("*"))
        if p.is_file()
    }


def holding(top: Path, *values: str) -> list[str]:
    """Files under `top` holding any value as raw bytes (a database's pages and WAL too)."""
    out = []
    for p in sorted(top.rglob("*")):
        if p.is_file() and p.name not in (".env", ".env.local"):  # the project's own
            data = p.read_bytes()
            if any(v.encode() in data for v in values):
                out.append(str(p.relative_to(top)))
    return out


def integrity(db: Path) -> str:
    con = sqlite3.connect(db)
    try:
        return str(con.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        con.close()
