"""`gate users add|list|revoke`: the people a shared gate serves (docs/team.md)."""

from __future__ import annotations

import click

from gate import dirs
from gate.cli.audit import when
from gate.cli.common import echo_json, json_option
from gate.errors import GateError
from gate.users import Users


def _users() -> Users:
    return Users(dirs.private_dir(dirs.data_dir()))


@click.group("users")
def users_group() -> None:
    """The users of a shared gate: each has an agent token (for base URLs) and a person
    token (for the approval page and the control API). Stored hashed in the data dir."""


@users_group.command("add")
@click.argument("name")
@click.option("--admin", is_flag=True, help="May see and answer every user's questions.")
@json_option
def add_cmd(name: str, admin: bool, as_json: bool) -> None:
    """Add user NAME and print their two tokens, once (only their hashes are kept)."""
    try:
        issued = _users().add(name, admin)
    except ValueError as exc:
        raise GateError(str(exc), where=name) from exc
    if as_json:
        echo_json(
            {
                "user": issued.user.name,
                "admin": admin,
                "agent_token": issued.agent_token,
                "person_token": issued.person_token,
            }
        )
        return
    click.echo(f"user {name} added{' (admin)' if admin else ''}. These tokens are shown once:")
    click.echo(f"  agent token:  {issued.agent_token}")
    click.echo(
        "    for the agent's base URL, e.g. https://GATE:PORT/_user/<agent token>"
        "/anthropic, or the x-gate-user-token header"
    )
    click.echo(f"  person token: {issued.person_token}")
    click.echo(
        "    for the approval page (https://GATE:PORT/_gate/ui?token=<person token>)"
        " and the control API; never give it to an agent"
    )


@users_group.command("list")
@json_option
def list_cmd(as_json: bool) -> None:
    """List the users (never their tokens)."""
    users = _users().all()
    if as_json:
        echo_json(
            {
                "users": [
                    {"name": u.name, "admin": u.admin, "created": u.created, "revoked": u.revoked}
                    for u in users
                ]
            }
        )
        return
    if not users:
        click.echo("no users (`gate users add NAME` adds one)")
        return
    for u in users:
        state = f"revoked {when(u.revoked)}" if u.revoked is not None else "active"
        click.echo(
            f"{u.name:<24} {'admin' if u.admin else 'user':<6} added {when(u.created)}  {state}"
        )


@users_group.command("revoke")
@click.argument("name")
@json_option
def revoke_cmd(name: str, as_json: bool) -> None:
    """Revoke user NAME's tokens; a running gate refuses them from the next request."""
    try:
        user = _users().revoke(name)
    except ValueError as exc:
        raise GateError(str(exc), where=name) from exc
    if as_json:
        echo_json({"user": user.name, "revoked": user.revoked})
        return
    click.echo(f"user {name} revoked: both tokens are refused from now on")


COMMANDS = (users_group,)
