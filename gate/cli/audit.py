"""`gate log` and `gate show`: what was sent, from the audit."""

from __future__ import annotations

import datetime as dt
import json
import sys
from typing import Any

import click

from gate import dirs
from gate.audit.store import AuditStore
from gate.cli.common import echo_json, json_option


def _store() -> AuditStore:
    return AuditStore(dirs.data_dir() / "audit.db")


@click.command("log")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@json_option
def log_cmd(limit: int, as_json: bool) -> None:
    """List recent requests: when, where, model, size, what was withheld, status, tokens."""
    rows = list(_store().rows(limit))
    for row in rows:
        row.pop("body")
    if as_json:
        echo_json({"requests": rows})
        return
    if not rows:
        click.echo("no requests recorded yet")
        return
    for r in reversed(rows):
        when = dt.datetime.fromtimestamp(r["ts"]).strftime("%Y-%m-%d %H:%M:%S")
        tokens = f"{r['input_tokens'] or '-'}/{r['output_tokens'] or '-'}"
        withheld = f" withheld={len(r['withheld'])}" if r["withheld"] else ""
        click.echo(f"{r['id']:>6}  {when}  {r['verdict']:<9} {r['status'] or '-':>3}  "
                   f"{r['upstream']}{r['path'].split('?')[0]}  {r['model'] or '-'}  "
                   f"{r['request_bytes']}B  tok={tokens}{withheld}")


@click.command("show")
@click.argument("request_id", type=int)
@json_option
def show_cmd(request_id: int, as_json: bool) -> None:
    """Show one request, with the exact body that was sent."""
    row = _store().get(request_id)
    if row is None:
        click.echo(f"gate: no request {request_id} in the audit", err=True)
        sys.exit(1)
    if as_json:
        echo_json({"request": row})
        return
    body = row.pop("body")
    for key, value in row.items():
        if value not in (None, [], ""):
            click.echo(f"{key:<22} {json.dumps(value) if isinstance(value, list) else value}")
    if body is not None:
        click.echo("\n--- body sent ---")
        click.echo(_pretty(body))


def _pretty(body: str) -> str:
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        return body
    return json.dumps(parsed, indent=2, ensure_ascii=False)


COMMANDS = (log_cmd, show_cmd)
