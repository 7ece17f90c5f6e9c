"""`gate scan`: find likely secrets in files, stdin, or a JSONL batch; never print one."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from gate.cli.common import echo_json, json_option
from gate.errors import GateError
from gate.screen.detectors import Finding
from gate.screen.secrets import Scanner


def mask(value: str) -> str:
    """First and last 4 characters of a long value, nothing of a short one."""
    return f"{value[:4]}…{value[-4:]}" if len(value) >= 16 else "*" * 8


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _record(path: str, text: str, f: Finding) -> dict[str, Any]:
    line, col = _position(text, f.start)
    return {"path": path, "line": line, "col": col, "kind": f.kind, "tier": str(f.tier),
            "rule_id": f.rule_id, "preview": mask(text[f.start:f.end])}


@click.command("scan")
@click.argument("paths", nargs=-1, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--jsonl", is_flag=True,
              help='Batch mode: read {"id", "text"} lines on stdin, write one findings line each.')
@json_option
def scan_cmd(paths: tuple[str, ...], jsonl: bool, as_json: bool) -> None:
    """Scan files (or - for stdin) for likely secrets.

    Prints path:line:col kind tier preview for each finding (the preview shows at most the
    first and last 4 characters). Exit 1 when anything is found.
    """
    scanner = Scanner()
    if jsonl:
        _batch(scanner)
        return
    found: list[dict[str, Any]] = []
    for name in paths or ("-",):
        try:
            text = (sys.stdin.read() if name == "-"
                    else Path(name).read_bytes().decode("utf-8", "replace"))
        except OSError as exc:
            raise GateError(f"cannot read: {exc.strerror}", where=name) from exc
        found += [_record(name, text, f) for f in scanner.scan(text)]
    if as_json:
        echo_json({"findings": found})
    else:
        for r in found:
            click.echo(f"{r['path']}:{r['line']}:{r['col']} {r['kind']} {r['tier']}"
                       f" {r['preview']}")
    sys.exit(1 if found else 0)


def _batch(scanner: Scanner) -> None:
    for n, line in enumerate(sys.stdin, 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            text = item["text"]
            if not isinstance(text, str):
                raise TypeError("text is not a string")
        except (ValueError, KeyError, TypeError) as exc:
            raise GateError(f"not a {{\"id\", \"text\"}} object ({exc})",
                            where=f"stdin line {n}") from exc
        findings = [{"start": f.start, "end": f.end, "kind": f.kind, "tier": str(f.tier)}
                    for f in scanner.scan(text)]
        click.echo(json.dumps({"id": item.get("id"), "findings": findings}))


COMMANDS = (scan_cmd,)
