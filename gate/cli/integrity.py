"""`gate audit verify` and `gate audit prune`: the audit's chain and its retention."""

from __future__ import annotations

import sys

import click

from gate.audit import chain, retention
from gate.cli.audit import open_store
from gate.cli.common import echo_json, json_option


@click.group("audit")
def audit_group() -> None:
    """Check and maintain the audit database (audit.db in the data dir)."""


@audit_group.command("verify")
@json_option
def verify_cmd(as_json: bool) -> None:
    """Check the hash chain, every body's chunks and every response's fields.

    Exit 0 when intact, 1 naming the first broken or missing link. The head hash printed
    can be kept elsewhere: a later head that does not extend it means rewritten history.
    """
    store = open_store()
    verdict = chain.verify(store.conn())
    # On PostgreSQL, say what the chain spans: every gate of the team, in one sequence.
    scope = (
        f"one chain for every gate writing to {store.where}, kept in daily partitions;"
        " retention drops the oldest days and the chain goes on from the last request"
        " dropped"
        if store.engine.postgres
        else None
    )
    if as_json:
        echo_json(
            {
                "ok": verdict.ok,
                "requests": verdict.requests,
                "chunks": verdict.chunks,
                "head": verdict.head,
                "broken_id": verdict.broken_id,
                "problem": verdict.problem,
                **({"chain": scope} if scope else {}),
            }
        )
    elif verdict.ok:
        click.echo(
            f"audit intact: {verdict.requests} requests, {verdict.chunks} chunks;"
            f" head {verdict.head or '-'}"
        )
    else:
        click.echo(
            f"audit BROKEN: {verdict.problem} (the {verdict.requests} requests before it verify)"
        )
    if scope and not as_json:
        click.echo(scope)
    sys.exit(0 if verdict.ok else 1)


@audit_group.command("prune")
@json_option
def prune_cmd(as_json: bool) -> None:
    """Apply audit.retention_days and audit.max_size_mb now (a serving gate does so at start
    and hourly)."""
    done = retention.prune(open_store())
    if as_json:
        echo_json(
            {
                "requests": done.requests,
                "chunks": done.chunks,
                "size_before": done.size_before,
                "size_after": done.size_after,
            }
        )
        return
    click.echo(
        f"pruned {done.requests} requests and {done.chunks} chunks;"
        f" {done.size_before >> 10} KB -> {done.size_after >> 10} KB in use"
    )


COMMANDS = (audit_group,)
