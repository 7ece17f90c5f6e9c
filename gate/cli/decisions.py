"""`gate decisions list|forget`: the answers gate remembers for this project or always."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict

import click

from gate import dirs
from gate.ask.memory_file import MemoryFile, forget_persisted, memory_path
from gate.cli.common import echo_json, json_option
from gate.errors import GateError


def _file() -> MemoryFile:
    return MemoryFile(memory_path(dirs.data_dir()))


@click.group("decisions")
def decisions_cmd() -> None:
    """Remembered answers (`--remember project|always`): list them, forget one.

    Only a keyed hash of the content is stored, never the value. Answers remembered for a
    session live in the running gate only and end with it.
    """


@decisions_cmd.command("list")
@json_option
def list_cmd(as_json: bool) -> None:
    """List remembered answers, oldest first: id, scope, answer, kind, where, expiry."""
    entries = sorted(_file().entries(), key=lambda e: e.created)
    if as_json:
        echo_json({"decisions": [asdict(e) for e in entries]})
        return
    if not entries:
        click.echo("no remembered decisions")
        return
    click.echo(f"{'ID':<10}  {'SCOPE':<7}  {'ANSWER':<7}  {'KIND':<22}  {'EXPIRES':<10}  WHERE")
    for e in entries:
        expires = dt.datetime.fromtimestamp(e.expires).strftime("%Y-%m-%d")
        click.echo(f"{e.id:<10}  {e.scope:<7}  {e.answer:<7}  {e.kind:<22}  {expires:<10}  "
                   f"{e.project or 'everywhere'}")


@decisions_cmd.command("forget")
@click.argument("entry_id", metavar="ID")
@json_option
def forget_cmd(entry_id: str, as_json: bool) -> None:
    """Forget one remembered answer: the next time that content is sent, gate asks again."""
    if not forget_persisted(_file(), entry_id):
        raise GateError(f"no remembered decision {entry_id!r}",
                        hint="`gate decisions list` shows the ids")
    if as_json:
        echo_json({"forgotten": entry_id})
    else:
        click.echo(f"forgot {entry_id}")


COMMANDS = (decisions_cmd,)
