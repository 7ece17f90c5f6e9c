"""`gate decisions list|forget`: the answers gate remembers for this project or always."""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict

import click

from gate import dirs
from gate.ask import memory_team
from gate.ask.memory_file import MemoryFile, forget_persisted, memory_path
from gate.ask.memory_team import TeamMemory
from gate.cli.common import echo_json, json_option, load_config
from gate.errors import GateError


def _file() -> MemoryFile:
    return MemoryFile(memory_path(dirs.data_dir()))


@click.group("decisions")
def decisions_cmd() -> None:
    """Remembered answers (`--remember project|always|team`): list them, forget one.

    Only a keyed hash of the content is stored, never the value. Answers remembered for a
    session live in the running gate only and end with it.
    """


@decisions_cmd.command("list")
@json_option
def list_cmd(as_json: bool) -> None:
    """List remembered answers, oldest first: id, scope, answer, kind, where, expiry.

    With a team key (decisions.team_key_file), the team's answers too (scope `team`, where
    is the repository)."""
    entries = sorted(_file().entries(), key=lambda e: e.created)
    team = _team()
    if team is not None:
        try:
            entries += team.entries()
        finally:
            team.close()
    if as_json:
        echo_json({"decisions": [asdict(e) for e in entries]})
        return
    if not entries:
        click.echo("no remembered decisions")
        return
    click.echo(f"{'ID':<11}  {'SCOPE':<7}  {'ANSWER':<7}  {'KIND':<22}  {'EXPIRES':<10}  WHERE")
    for e in entries:
        expires = dt.datetime.fromtimestamp(e.expires).strftime("%Y-%m-%d")
        click.echo(
            f"{e.id:<11}  {e.scope:<7}  {e.answer:<7}  {e.kind:<22}  {expires:<10}  "
            f"{e.project or 'everywhere'}"
        )


@decisions_cmd.command("forget")
@click.argument("entry_id", metavar="ID")
@json_option
def forget_cmd(entry_id: str, as_json: bool) -> None:
    """Forget one remembered answer: the next time that content is sent, gate asks again.

    A team answer is forgotten for every gate of the team (this needs the team key)."""
    found = forget_persisted(_file(), entry_id)
    if not found and (team := _team()) is not None:
        try:
            found = team.forget(entry_id)
        finally:
            team.close()
    if not found:
        raise GateError(
            f"no remembered decision {entry_id!r}", hint="`gate decisions list` shows the ids"
        )
    if as_json:
        echo_json({"forgotten": entry_id})
    else:
        click.echo(f"forgot {entry_id}")


def _team() -> TeamMemory | None:
    return memory_team.from_config(load_config())


COMMANDS = (decisions_cmd,)
