"""`gate report` and `gate export`: what left the machine, summed up or one line a request."""

from __future__ import annotations

import contextlib
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import click

from gate import dirs
from gate.audit import html, report, tables
from gate.audit.engine import engine_for
from gate.audit.store import AuditStore
from gate.cli.common import echo_json, json_option, load_config, since_option
from gate.errors import GateError, StateError, Unreachable


@contextlib.contextmanager
def _audit() -> Iterator[sqlite3.Connection | None]:
    """The audit, read-only (None when there is none yet); a damaged one is an error that
    names the file, never an empty report."""
    path = dirs.data_dir() / "audit.db"
    if path.parent.exists() and not path.parent.is_dir():  # never "nothing was sent"
        raise Unreachable(
            "the data dir is not a directory",
            where=str(path.parent),
            hint="set GATE_DATA_DIR to gate's data dir (`gate paths`)",
        )
    settings = load_config().audit
    if engine_for(path, settings).postgres:  # shared by many gates: read through the store
        store = AuditStore(path, settings, reader=True)
        try:
            yield store.conn()
        except report.BadRow as exc:
            raise StateError(str(exc), where=store.where) from exc
        finally:
            store.close()
        return
    try:
        db = report.connect(path)
    except sqlite3.Error as exc:
        raise StateError(
            f"cannot read the audit: {exc}",
            where=str(path),
            hint="check `gate paths`; a damaged audit.db can be moved aside"
            " (gate creates a new one)",
        ) from exc
    try:
        yield db
    except report.BadRow as exc:
        raise StateError(str(exc), where=str(path)) from exc
    finally:
        if db is not None:
            db.close()


def _output(path: Path) -> contextlib.AbstractContextManager[BinaryIO]:
    """Where --html and --output write: an owner-only file replaced whole once complete,
    so a failed run never leaves half a report."""
    if not path.parent.is_dir():
        raise GateError(f"no such directory: {path.parent}", where=str(path))
    return dirs.replace_private(path)


@click.command("report")
@since_option
@json_option
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write the report as one self-contained HTML file (mode 0600).",
)
def report_cmd(since: float | None, as_json: bool, html_file: Path | None) -> None:
    """Sum up what left the machine: requests, bytes and tokens per day, host, agent and
    model; what was withheld or redacted, by kind and rule; blocked requests by reason;
    questions asked and how they were answered.

    Reads only the audit's metadata, never a request body. All time unless --since.
    """
    with _audit() as db:
        result = report.build(db, since)
    if html_file is not None:
        with _output(html_file) as f:
            f.write(html.render(result).encode())
    if as_json:
        echo_json(result.as_json())
    else:
        click.echo(tables.text(result), nl=False)
    if html_file is not None:  # on stderr: stdout holds exactly the report
        click.echo(f"HTML report written to {html_file}", err=True)


@click.command("export")
@click.option(
    "--jsonl",
    is_flag=True,
    default=True,
    help="One JSON object per line per request (the default and only format).",
)
@since_option
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write to FILE (mode 0600) instead of stdout.",
)
def export_cmd(jsonl: bool, since: float | None, output: Path | None) -> None:
    """Export the audit for a SIEM or a data warehouse: one JSON line per request, oldest
    first, with its metadata, what was withheld and the decisions taken. Never a body,
    never a header. Field names are stable (docs/report.md).
    """
    with _audit() as db, contextlib.ExitStack() as stack:
        out: BinaryIO = (
            stack.enter_context(_output(output)) if output is not None else sys.stdout.buffer
        )
        lines = 0
        for line in report.export_lines(db, since):
            out.write(line)
            lines += 1
    if output is not None:
        click.echo(f"{lines} requests written to {output}", err=True)


COMMANDS = (report_cmd, export_cmd)
