"""The `gate` command line."""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any

import click

from gate import __version__
from gate.errors import GateError

# Each command's module, imported only when the command runs (or help lists it): `gate
# scan` need not load mitmproxy. tests/cli/test_json_output.py checks this against every
# module's COMMANDS.
MODULES = {
    "serve": "serve",
    "run": "serve",
    "env": "serve",
    "log": "audit",
    "show": "audit",
    "search": "search",
    "audit": "integrity",
    "report": "report",
    "export": "report",
    "paths": "paths",
    "rules": "rules",
    "scan": "scan",
    "pending": "ask",
    "approve": "ask",
    "redact": "ask",
    "block": "ask",
    "decisions": "decisions",
    "watch": "watch",
    "ca": "ca",
    "doctor": "doctor",
    "demo": "demo",
    "history": "history",
    "sessions": "sessions",
    "completion": "completion",
    "users": "users",
}


class _Group(click.Group):
    """Turns a GateError into its diagnostics and exit code 1, without a traceback; with
    --json, every failure is one JSON object on stdout too: {"ok": false, "error": {...}}."""

    def invoke(self, ctx: click.Context) -> Any:
        wants_json = "--json" in ctx.args  # the subcommand's arguments, not parsed yet
        try:
            return super().invoke(ctx)
        except GateError as exc:
            _fail(exc, wants_json)
        except click.UsageError as exc:
            if wants_json:
                _json_error("usage", exc.format_message(), "see --help")
            raise
        except Exception as exc:
            from gate.cli.exits import unreadable

            if (failure := unreadable(exc)) is None:
                raise
            _fail(failure, wants_json)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *MODULES})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in MODULES:
            module = importlib.import_module(f"gate.cli.{MODULES[cmd_name]}")
            for command in module.COMMANDS:
                self.add_command(command)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        named = {name for _, names in _SECTIONS for name in names}
        sections = [
            *_SECTIONS,
            ("Other", tuple(n for n in self.list_commands(ctx) if n not in named)),
        ]
        for title, names in sections:
            rows = [
                (n, cmd.get_short_help_str(limit=formatter.width - 20))
                for n in names
                if (cmd := self.get_command(ctx, n)) and not cmd.hidden
            ]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


# `gate --help` lists the commands by what a person is doing (a command not named here is
# listed under "Other", so a new one is never hidden).
_SECTIONS = (
    ("Run agents through gate", ("run", "serve", "env")),
    ("Answer its questions", ("watch", "pending", "approve", "redact", "block", "decisions")),
    ("See what was sent", ("log", "show", "sessions", "search", "report", "export")),
    ("Rules, secrets and setup", ("rules", "scan", "paths", "audit", "completion", "users")),
)


def _fail(exc: GateError, wants_json: bool) -> None:
    """Say what went wrong (once, as JSON too with --json) and exit with its code."""
    if wants_json:
        click.echo(json.dumps({"ok": False, "error": exc.to_json()}, indent=2))
    click.echo(f"gate: {exc.diagnostics()}", err=True)
    sys.exit(exc.exit_code)


def _json_error(code: str, message: str, hint: str | None, where: str | None = None) -> None:
    error = {"code": code, "message": message, "hint": hint or ""}
    click.echo(
        json.dumps(
            {"ok": False, "error": {**error, **({"where": where} if where else {})}}, indent=2
        )
    )


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gate")
def cli() -> None:
    """gate: a local privacy gate between coding agents and their model providers.

    Quick start: `gate run -- claude` wraps one agent run; `gate serve` runs a gate that
    agents point their base URL at; `gate log` shows what was sent.
    """


def main() -> None:
    cli(prog_name="gate")
