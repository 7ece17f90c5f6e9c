"""`gate log` and `gate show`: what was sent, from the audit."""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
from typing import Any

import click

from gate import dirs
from gate.audit.report import approved, shown_verdict
from gate.audit.store import AuditStore
from gate.cli.common import echo_json, json_option, load_config, since_option
from gate.errors import GateError


def open_store() -> AuditStore:
    """The audit as the CLI reads it (config.yaml's lock timeout; no background work)."""
    return AuditStore(dirs.data_dir() / "audit.db", load_config().audit, reader=True)


def when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


FOLLOW_SECONDS = 0.5  # how often `gate log --follow` looks for new requests
_VERDICT_COLOURS = {
    "forwarded": "green",
    "modified": "yellow",
    "blocked": "red",
    "failed": "red",
    "withdrawn": "magenta",
    "unscreened": "red",
}


def ago(ts: float, now: float | None = None) -> str:
    """A time as a person says it: "12 s ago", "3 min ago", "5 h ago", then the date."""
    span = (time.time() if now is None else now) - ts
    if span < 60:
        return f"{max(0, int(span))} s ago"
    if span < 3600:
        return f"{int(span // 60)} min ago"
    if span < 86400:
        return f"{int(span // 3600)} h ago"
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


@click.command("log")
@since_option
@click.option("--agent", help="Only requests from this agent (as `gate log` names it).")
@click.option(
    "--verdict",
    type=click.Choice(["forwarded", "modified", "blocked", "failed", "withdrawn", "unscreened"]),
    help="Only requests with this verdict.",
)
@click.option("--session", help="Only requests of this conversation (see `gate sessions`).")
@click.option("--run", "run_id", help="Only requests of this `gate run` (its summary names it).")
@click.option("--user", help="Only requests this user of a shared gate sent (`gate users list`).")
@click.option("--follow", "-f", is_flag=True, help="Keep printing new requests as they come.")
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@click.option(
    "--tunnels",
    "with_tunnels",
    is_flag=True,
    help="Instead of requests: forward mode's connections to hosts gate does not"
    " screen (tunnelled, relayed unread or refused), with their bytes.",
)
@json_option
def log_cmd(
    since: float | None,
    agent: str | None,
    verdict: str | None,
    session: str | None,
    run_id: str | None,
    user: str | None,
    follow: bool,
    limit: int,
    with_tunnels: bool,
    as_json: bool,
) -> None:
    """List recent requests: when, agent, verdict, status, where, model, size, tokens,
    what was withheld and what a person approved. Colour on a terminal (not with NO_COLOR).
    With --tunnels: host, port, kind, bytes up/down, agent, run and time of each connection
    gate did not read."""
    store = open_store()
    if with_tunnels:
        if verdict or session or follow:
            raise click.UsageError(
                "--tunnels takes --since, --agent, --run, --limit and --json only"
            )
        from gate.cli import tunnels

        tunnels.show(store, since=since, agent=agent, run_id=run_id, limit=limit, as_json=as_json)
        return
    filters = {
        "since": since,
        "agent": agent,
        "verdict": verdict,
        "session": session,
        "run_id": run_id,
        "user": user,
    }
    rows = list(store.rows(limit, body=False, **filters))  # type: ignore[arg-type]
    if as_json:
        if follow:
            raise click.UsageError("--follow prints lines; it does not combine with --json")
        echo_json({"ok": True, "requests": rows})
        return
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    if not rows and not follow:
        click.echo(
            "no requests recorded"
            + (" matching these filters" if any(filters.values()) else " yet")
        )
        return
    click.echo(
        _style(
            f"{'ID':>6}  {'WHEN':<12}  {'AGENT':<12} {'VERDICT':<9} {'ST':>3}  "
            "WHERE  MODEL  SIZE  TOKENS in/out  WITHHELD",
            "bold",
            color,
        )
    )
    last = 0
    for r in reversed(rows):
        click.echo(_line(r, color))
        last = max(last, r["id"])
    if follow:
        _follow(store, filters, last, color)


def _follow(store: AuditStore, filters: dict[str, Any], last: int, color: bool) -> None:
    """Print each new request as it is recorded, until Ctrl-C (which ends it quietly)."""
    try:
        while True:
            sys.stdout.flush()  # a pipe (`gate log -f | grep`) sees each line as it comes
            time.sleep(FOLLOW_SECONDS)
            new = [r for r in store.rows(500, body=False, **filters) if r["id"] > last]
            for r in reversed(new):
                click.echo(_line(r, color))
                last = max(last, r["id"])
    except KeyboardInterrupt:
        return


def _line(r: dict[str, Any], color: bool) -> str:
    from gate.audit.tables import size

    tokens = f"{r['input_tokens'] or '-'}/{r['output_tokens'] or '-'}"
    kept = [w for w in r["withheld"] if not approved(w.get("decision"))]
    sent = len(r["withheld"]) - len(kept)  # findings a person or memory approved
    withheld = (f" withheld={len(kept)}" if kept else "") + (f" approved={sent}" if sent else "")
    shown = shown_verdict(r)
    colour = _VERDICT_COLOURS.get(shown, "")
    return (
        f"{r['id']:>6}  {ago(r['ts']):<12}  {r['agent'] or '-':<12} "
        f"{_style(f'{shown:<9}', colour, color)}"
        f" {r['status'] or '-':>3}  {r['upstream']}{r['path'].split('?')[0]}"
        f"  {r['model'] or '-'}  {size(r['request_bytes'])}  tok={tokens}{withheld}"
        + (f" user={r['user_name']}" if r.get("user_name") else "")
    )


def _style(text: str, how: str, color: bool) -> str:
    if not color or not how:
        return text
    return click.style(text, bold=True) if how == "bold" else click.style(text, fg=how)


@click.command("show")
@click.argument("request_id", type=int, required=False)
@click.option(
    "--body",
    "with_body",
    is_flag=True,
    help="Also print the body sent (secrets masked unless --reveal).",
)
@click.option("--raw", is_flag=True, help="Print only the exact bytes sent (for jq).")
@click.option(
    "--new",
    "only_new",
    is_flag=True,
    help="Print only what this request added since the previous request of the same session.",
)
@click.option(
    "--session",
    help="Instead of one request: a conversation, turn by turn, as"
    " the provider received it (see `gate sessions`).",
)
@click.option("--reveal", is_flag=True, help="Show secrets a person approved (masked by default).")
@json_option
def show_cmd(
    request_id: int | None,
    with_body: bool,
    raw: bool,
    only_new: bool,
    session: str | None,
    reveal: bool,
    as_json: bool,
) -> None:
    """Show one request: its metadata, what was withheld and why, and on request its body;
    or, with --session, a whole conversation turn by turn."""
    if (request_id is None) == (session is None):
        raise click.UsageError("give a REQUEST_ID or --session ID (one of them)")
    if session is not None:
        from gate.cli.sessions import show_session

        show_session(session, reveal, as_json)
        return
    assert request_id is not None
    store = open_store()
    if raw:
        sent = store.body_of(request_id)
        if sent is None:
            click.echo(f"gate: no body recorded for request {request_id}", err=True)
            sys.exit(1)
        sys.stdout.buffer.write(sent)
        return
    row = store.get(request_id, body=with_body)
    if row is None:
        raise GateError(
            f"no request {request_id} in the audit", hint="`gate log` lists the recorded requests"
        )
    new = _new_parts(store, request_id) if only_new else None
    if as_json:
        echo_json({"request": row, **({"new": new} if new is not None else {})})
        return
    body = row.pop("body", None)
    if body is not None and not reveal:
        from gate.cli.sessions import masked

        body = masked(body)
    for key, value in row.items():
        if value not in (None, [], ""):
            click.echo(f"{key:<22} {_readable(key, value)}")
    if body is not None:
        click.echo("\n--- body sent ---")
        click.echo(_pretty(body))
    if new is not None:
        prev = new["previous"]
        click.echo(
            "\n--- no body was recorded for this request ---"
            if not new["parts"]
            else f"\n--- new since request {prev} ({new['new_bytes']} of"
            f" {new['body_bytes']} bytes) ---"
            if prev
            else "\n--- no earlier request in this session: all of it is new ---"
        )
        for part in new["parts"]:
            click.echo(f"@{part['offset']}: {part['text']}")


def _readable(key: str, value: Any) -> str:
    """A field of `gate show` as a person reads it: times with how long ago, latency in
    ms or s, sizes in kB and MB (--json keeps the raw numbers)."""
    from gate.audit.tables import size

    if isinstance(value, list):
        return json.dumps(value)
    if key == "ts" and isinstance(value, int | float):
        return f"{when(value)} ({ago(value)})"
    if key.endswith("_ms") and isinstance(value, int | float):
        return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.2f} s"
    if key.endswith("_bytes") and isinstance(value, int):
        return f"{size(value)} ({value} bytes)" if value >= 1000 else size(value)
    return str(value)


def _new_parts(store: AuditStore, row_id: int) -> dict[str, Any]:
    """The byte ranges of this body made of chunks the session's previous request did not
    have: the turn's new messages, plus any earlier block the agent changed."""
    ids = store.chunk_ids(row_id)
    prev = store.previous_in_session(row_id)
    before = set(store.chunk_ids(prev)) if prev else set()
    data = store.chunk_data(ids)
    parts: list[dict[str, Any]] = []
    offset = 0
    for cid in ids:
        piece = data[cid]
        if cid not in before:
            if parts and parts[-1]["offset"] + parts[-1]["bytes"] == offset:
                parts[-1]["raw"] += piece
                parts[-1]["bytes"] += len(piece)
            else:
                parts.append({"offset": offset, "bytes": len(piece), "raw": piece})
        offset += len(piece)
    for part in parts:
        part["text"] = part.pop("raw").decode("utf-8", "replace")
    return {
        "previous": prev,
        "body_bytes": offset,
        "new_bytes": sum(p["bytes"] for p in parts),
        "parts": parts,
    }


def _pretty(body: str) -> str:
    try:
        parsed: Any = json.loads(body)
    except ValueError:
        return body
    return json.dumps(parsed, indent=2, ensure_ascii=False)


COMMANDS = (log_cmd, show_cmd)
