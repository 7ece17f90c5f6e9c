"""`gate completion bash|zsh|fish`: the shell's tab-completion script for gate."""

from __future__ import annotations

import click
from click.shell_completion import get_completion_class


@click.command("completion")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.pass_context
def completion_cmd(ctx: click.Context, shell: str) -> None:
    """Print the completion script for SHELL. Install it with, for bash:
    `gate completion bash > ~/.local/share/bash-completion/completions/gate`; zsh:
    `gate completion zsh > "${fpath[1]}/_gate"`; fish:
    `gate completion fish > ~/.config/fish/completions/gate.fish`."""
    cls = get_completion_class(shell)
    assert cls is not None  # the three choices are click's own
    root = ctx.find_root().command
    click.echo(cls(root, {}, "gate", "_GATE_COMPLETE").source())


COMMANDS = (completion_cmd,)
