"""`gate log --tunnels`: forward mode's connections to hosts gate does not screen."""

from __future__ import annotations

from typing import Any

import click

from gate.audit import tunnels
from gate.audit.store import AuditStore
from gate.audit.tables import size
from gate.cli.common import echo_json


def show(
    store: AuditStore,
    *,
    since: float | None,
    agent: str | None,
    run_id: str | None,
    limit: int,
    as_json: bool,
) -> None:
    """Print the connection rows, newest last (as `gate log` prints requests)."""
    from gate.cli.audit import ago

    rows = tunnels.rows(store, limit, since=since, agent=agent, run_id=run_id)
    if as_json:
        echo_json({"ok": True, "tunnels": rows})
        return
    if not rows:
        click.echo(
            "no connections recorded"
            + (" matching these filters" if since or agent or run_id else " yet")
        )
        return
    click.echo(
        f"{'ID':>6}  {'WHEN':<12}  {'KIND':<8} {'HOST:PORT':<40} {'UP':>8} "
        f"{'DOWN':>8}  {'AGENT':<12} RUN  REASON"
    )
    for r in reversed(rows):
        click.echo(_line(r, ago(r["ts"])))


def _line(r: dict[str, Any], when: str) -> str:
    where = f"{r['host']}:{r['port']}"
    open_ = r["ended"] is None and r["kind"] != tunnels.Kind.BLOCKED
    up, down = ("open", "") if open_ else (size(r["bytes_out"]), size(r["bytes_in"]))
    return (
        f"{r['id']:>6}  {when:<12}  {r['kind']:<8} {where:<40} {up:>8} {down:>8}  "
        f"{r['agent'] or '-':<12} {r['run_id'] or '-'}  {r['reason'] or ''}"
    ).rstrip()
