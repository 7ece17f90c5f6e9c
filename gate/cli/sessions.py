"""`gate sessions` and `gate show --session`: conversations, and what the model saw in one."""

from __future__ import annotations

import os
import re
import sys

import click

from gate.audit import conversations
from gate.audit.conversations import Item
from gate.audit.report import shown_verdict
from gate.audit.turns import turns as turn_list
from gate.cli.audit import open_store, when
from gate.cli.common import echo_json, json_option, since_option
from gate.errors import GateError
from gate.screen.secrets import Scanner

PLACEHOLDER = re.compile(r"\[gate: [^\]]*\]")


def color_on() -> bool:
    """Colour on a terminal only, and never with NO_COLOR set (no-color.org)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


@click.command("sessions")
@since_option
@click.option("--limit", type=click.IntRange(1), default=30, show_default=True)
@json_option
def sessions_cmd(since: float | None, limit: int, as_json: bool) -> None:
    """List conversations: agent, project, first prompt, turns, time, what was withheld.

    `gate show --session ID` shows one turn by turn (a unique prefix of ID is enough).
    """
    found = conversations.listed(open_store(), since, limit)
    if as_json:
        echo_json({"ok": True, "sessions": [c.to_json() for c in found]})
        return
    if not found:
        click.echo("no conversations recorded" + (" in this period" if since else " yet"))
        return
    click.echo(f"{'SESSION':<18}  {'LAST':<19}  {'AGENT':<12}  TURNS  WITHHELD  FIRST PROMPT")
    scanner = Scanner()  # built once: it compiles its keyword automaton (~35 ms)
    for c in found:
        held = f"{c.withheld}" + (f" +{c.blocked} blocked" if c.blocked else "")
        click.echo(
            f"{c.session:<18}  {when(c.last_ts)}  {(c.agent or '-')[:12]:<12}  "
            f"{c.requests:>5}  {held:>8}  {_mask(c.first_prompt, scanner, False)}"
        )
        if c.project:
            click.echo(f"{'':<18}  project {c.project}")


def show_session(session: str, reveal: bool, as_json: bool) -> None:
    """Each request of the conversation as the provider received it, what each turn added
    marked `+`, gate's placeholders highlighted, secrets masked unless `reveal`."""
    store = open_store()
    try:
        ids = conversations.requests_of(store, session)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if not ids:
        raise GateError(
            f"no session {session!r} in the audit",
            hint="`gate sessions` lists the recorded conversations",
        )
    turns = turn_list(store, ids)
    scanner = Scanner()
    if as_json:
        echo_json(
            {
                "ok": True,
                "session": session,
                "turns": [
                    {
                        **t["row"],
                        "new_from": t["new_from"],
                        "items": [
                            {"role": i.role, "text": _mask(i.text, scanner, reveal)}
                            for i in t["items"]
                        ],
                    }
                    for t in turns
                ],
            }
        )
        return
    color = color_on()
    for n, t in enumerate(turns, 1):
        row = t["row"]
        click.echo(
            click.style(
                f"── turn {n} · request {row['id']} · {when(row['ts'])} · {row['model'] or '-'}"
                f" · {shown_verdict(row)}",
                bold=True,
            )
            if color
            else f"── turn {n} · request {row['id']} · {when(row['ts'])} · {row['model'] or '-'}"
            f" · {shown_verdict(row)}"
        )
        if row["verdict"] == "blocked":
            click.echo(f"   blocked, not sent: {row.get('reason') or ''}")
        for k, item in enumerate(t["items"]):
            if k < t["new_from"]:
                continue
            _echo_item(item, scanner, reveal, color)
        if t["new_from"] and not t["items"][t["new_from"] :]:
            click.echo("   (nothing new)")


def _echo_item(item: Item, scanner: Scanner, reveal: bool, color: bool) -> None:
    text = _mask(item.text, scanner, reveal)
    if color:
        text = PLACEHOLDER.sub(lambda m: click.style(m[0], fg="yellow", bold=True), text)
    label = click.style(f"{item.role}:", fg="cyan") if color else f"{item.role}:"
    lines = text.splitlines() or [""]
    click.echo(f" + {label} {lines[0]}")
    for line in lines[1:]:
        click.echo(f"   {line}")


def masked(text: str) -> str:
    return _mask(text, Scanner(), False)


def _mask(text: str, scanner: Scanner, reveal: bool) -> str:
    """Secrets a person approved were sent as they are: on screen they are masked unless
    --reveal (only the kind and length show)."""
    if reveal:
        return text
    out, at = [], 0
    for f in scanner.scan(text):
        out += [text[at : f.start], f"[{f.kind}: {f.end - f.start} chars masked]"]
        at = f.end
    return "".join([*out, text[at:]])


COMMANDS = (sessions_cmd,)
