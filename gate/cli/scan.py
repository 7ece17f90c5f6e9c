"""`gate scan`: find likely secrets in files, directories, stdin or a JSONL batch; never
print one.

Exit codes: 0 nothing (new) found, 1 findings, 2 usage error, 3 an input cannot be read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from gate.cli.common import echo_json
from gate.cli.walk import SNIFF, files, is_binary
from gate.errors import GateError, Unreachable
from gate.screen import baseline
from gate.screen.detectors import Finding, Tier
from gate.screen.secrets import Scanner

EXIT_FOUND = 1


def mask(value: str) -> str:
    """First and last 4 characters of a long value, nothing of a short one."""
    return f"{value[:4]}…{value[-4:]}" if len(value) >= 16 else "*" * 8


def _position(text: str, offset: int) -> tuple[int, int]:
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def _record(path: str, text: str, f: Finding, fingerprint: bool) -> dict[str, Any]:
    """One finding for output; the fingerprint (a slow hash) only when something uses it."""
    line, col = _position(text, f.start)
    end_line, end_col = _position(text, f.end)
    value = text[f.start : f.end]
    record = {
        "path": path,
        "line": line,
        "col": col,
        "end_line": end_line,
        "end_col": end_col,
        "kind": f.kind,
        "tier": str(f.tier),
        "rule_id": f.rule_id,
        "preview": mask(value),
    }
    if fingerprint:
        record["fingerprint"] = baseline.fingerprint(f.rule_id, path, value)
    return record


def _inputs(paths: tuple[str, ...]) -> list[tuple[str, Path | None]]:
    """(shown name, file) per input; a directory becomes its files (.gitignore honoured)."""
    out: list[tuple[str, Path | None]] = []
    for name in paths or ("-",):
        if name == "-":
            out.append(("-", None))
            continue
        path = Path(name)
        if path.is_dir():
            out += [(str(p), p) for p in files(path)]
        else:
            out.append((name, path))
    return out


def _read(name: str, path: Path | None) -> str | None:
    """The text of one input; None for a binary file, which is skipped."""
    if path is None:
        return sys.stdin.read()
    data = path.read_bytes()
    return None if is_binary(data[:SNIFF]) else data.decode("utf-8", "replace")


@click.command("scan")
@click.argument("paths", nargs=-1, type=click.Path(allow_dash=True))
@click.option(
    "--jsonl",
    is_flag=True,
    help='Batch mode: read {"id", "text"} lines on stdin, write one findings line each.',
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option("--sarif", "as_sarif", is_flag=True, help="Print SARIF 2.1.0 (code scanning).")
@click.option(
    "--tier",
    type=click.Choice([t.value for t in Tier]),
    default=Tier.LOW.value,
    show_default=True,
    help="Report findings of this tier and above (high: only what gate would ask about).",
)
@click.option(
    "--baseline",
    "baseline_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Known findings (by fingerprint, never values) that are not reported.",
)
@click.option(
    "--update-baseline",
    is_flag=True,
    help="Write every current finding into --baseline FILE and exit 0.",
)
def scan_cmd(
    paths: tuple[str, ...],
    jsonl: bool,
    as_json: bool,
    as_sarif: bool,
    tier: str,
    baseline_file: Path | None,
    update_baseline: bool,
) -> None:
    """Scan files, directories (recursively, honouring .gitignore) or - for stdin.

    Prints path:line:col kind tier preview for each finding (the preview shows at most the
    first and last 4 characters). Exit 0 when nothing new is found, 1 when something is,
    2 on a usage error, 3 when an input cannot be read.
    """
    if as_json and as_sarif:
        raise click.UsageError("--json and --sarif are exclusive")
    if update_baseline and baseline_file is None:
        raise click.UsageError("--update-baseline needs --baseline FILE")
    scanner = Scanner()
    if jsonl:
        _batch(scanner)
        return
    try:
        known = set() if baseline_file is None or update_baseline else baseline.load(baseline_file)
    except GateError as exc:
        raise Unreachable(exc.message, where=exc.where, hint=exc.hint) from exc
    found: list[dict[str, Any]] = []
    prints = baseline_file is not None or as_json or as_sarif
    for name, path in _inputs(paths):
        try:
            text = _read(name, path)
        except OSError as exc:
            raise Unreachable(f"cannot read: {exc.strerror}", where=name) from exc
        if text is not None:
            found += [
                _record(name, text, f, prints)
                for f in scanner.scan(text)
                if tier == Tier.LOW or f.tier is Tier.HIGH
            ]
    if update_baseline:
        assert baseline_file is not None
        baseline.save(
            baseline_file,
            [baseline.Known(r["fingerprint"], r["path"], r["rule_id"], r["line"]) for r in found],
        )
        click.echo(f"{baseline_file}: {len(found)} known findings", err=True)
        return
    found = [r for r in found if r.get("fingerprint") not in known]
    if as_sarif:
        from gate.screen import sarif

        echo_json(sarif.document(found, scanner.detectors))
    elif as_json:
        echo_json({"findings": found})
    else:
        for r in found:
            click.echo(f"{r['path']}:{r['line']}:{r['col']} {r['kind']} {r['tier']} {r['preview']}")
    sys.exit(EXIT_FOUND if found else 0)


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
            raise GateError(
                f'not a {{"id", "text"}} object ({exc})', where=f"stdin line {n}"
            ) from exc
        findings = [
            {"start": f.start, "end": f.end, "kind": f.kind, "tier": str(f.tier)}
            for f in scanner.scan(text)
        ]
        click.echo(json.dumps({"id": item.get("id"), "findings": findings}))


COMMANDS = (scan_cmd,)
