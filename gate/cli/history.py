"""`gate history`: what agents' own transcripts already hold, and cleaning it."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from gate import dirs, log
from gate.cli.common import SinceType, echo_json, json_option
from gate.errors import GateError
from gate.history import backup, redact
from gate.history.engine import Filters
from gate.history.model import Agent, Store
from gate.history.readers import Env
from gate.history.session import Result, run
from gate.history.summary import text, to_json

_AGENTS = click.Choice([a.value for a in Agent])


def _options(f: Any) -> Any:
    for opt in reversed(
        (
            click.option(
                "--agent",
                "agents",
                multiple=True,
                type=_AGENTS,
                help="Only this agent's stores (repeatable).",
            ),
            click.option(
                "--since",
                type=SinceType(),
                default=None,
                help="Only what was written since then: 7d, 12h, or a date.",
            ),
            click.option(
                "--project",
                type=click.Path(file_okay=False, path_type=Path),
                help="Only sessions that ran in this directory (or below it).",
            ),
            click.option(
                "--home",
                type=click.Path(file_okay=False, path_type=Path),
                help="Read the stores under this home directory instead of yours.",
            ),
            click.option(
                "--jobs",
                type=click.IntRange(1, 64),
                default=None,
                help="Processes that scan at once (default: one per core).",
            ),
        )
    ):
        f = opt(f)
    return f


@click.group("history")
def history_group() -> None:
    """Agents' own transcripts: what they already hold, and cleaning it.

    Claude Code, Codex, Cursor, OpenCode, Copilot CLI, Hermes, Gemini CLI and Aider each
    keep every session on disk, with every file and command output the agent saw. `scan`
    finds the secrets and denied-file values in them with the wire's own screens, `redact`
    replaces them in place, `restore` puts the originals back.
    """
    # Warnings and errors only: the scan's own output and progress are the lines to read.
    log.configure(level="WARNING")


def _scan(
    agents: tuple[str, ...],
    since: float | None,
    project: Path | None,
    home: Path | None,
    jobs: int | None,
) -> Result:
    home = (home or Path.home()).expanduser()
    projects = tuple(p for p in (project, Path.cwd()) if p is not None)
    env = Env(home, dict(os.environ) if home == Path.home() else {}, projects)

    def progress(store: Store, n: int, total: int) -> None:
        if total >= 50 and (sys.stderr.isatty() or n % 200 == 0 or n == total):
            click.echo(f"\rscanning {n}/{total} stores ({store.agent})", err=True, nl=n == total)

    agent_list = [Agent(a) for a in agents]
    jobs = jobs or os.cpu_count() or 1
    return run(env, dirs.data_dir(), agent_list, Filters(since, project), progress, jobs=jobs)


@history_group.command("scan")
@_options
@click.option(
    "--html",
    "html_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write a self-contained HTML page with charts to FILE.",
)
@json_option
def scan_cmd(
    agents: tuple[str, ...],
    since: float | None,
    project: Path | None,
    home: Path | None,
    jobs: int | None,
    html_file: Path | None,
    as_json: bool,
) -> None:
    """Find secrets in every agent's stored history (read only; never prints a value).

    Grouped by secret, the ones to rotate first on top: whether each also left through
    gate (from the audit), and every copy's agent, session, project, time, store and
    place in the conversation. Exit 1 when anything is found.
    """
    result = _scan(agents, since, project, home, jobs)
    if html_file is not None:
        from gate.history import page

        with dirs.replace_private(html_file) as f:
            f.write(page.render(result.groups, result.stores, time.time()).encode())
    if as_json:
        echo_json(to_json(result.groups, result.stores, result.errors))
    else:
        for line in text(result.groups, result.stores):
            click.echo(line)
        for err in result.errors:
            click.echo(f"gate: {err}", err=True)
    sys.exit(1 if result.groups else 0)


@history_group.command("redact")
@_options
@click.option("--dry-run", is_flag=True, help="Show what would change; change nothing.")
@click.option("--yes", is_flag=True, help="Do not ask before changing the stores.")
@click.option(
    "--no-backup",
    is_flag=True,
    help="Keep no copy of the originals (then `restore` cannot undo this).",
)
@json_option
def redact_cmd(
    agents: tuple[str, ...],
    since: float | None,
    project: Path | None,
    home: Path | None,
    jobs: int | None,
    dry_run: bool,
    yes: bool,
    no_backup: bool,
    as_json: bool,
) -> None:
    """Replace every secret found in the stores with gate's placeholders, in place.

    Each store stays valid for its agent (JSONL line by line, SQLite with its full-text
    indexes rebuilt, its free pages and WAL cleared). Originals go to gate's data dir
    first (owner-only) unless --no-backup. A store an agent has open is skipped.
    """
    result = _scan(agents, since, project, home, jobs)
    plans = redact.plans(result.found, result.forms)
    lines = [f"{p.path}: {p.findings} copies of {len(p.values)} values ({p.agent})" for p in plans]
    if dry_run or not plans:
        _report(
            as_json,
            {"dry_run": dry_run, "stores": [_plan(p) for p in plans]},
            lines or ["nothing to redact"],
        )
        sys.exit(0)
    if not yes:
        if as_json:
            raise GateError("redacting changes the agents' stores: add --yes with --json")
        for line in lines:
            click.echo(line)
        click.confirm(f"Redact these {len(plans)} stores?", abort=True)
    saved = None if no_backup else backup.Backup(dirs.data_dir())
    outcomes = [redact.apply(p, saved) for p in plans]
    out, failed = [], False
    for o in outcomes:
        if o.held:
            out.append(
                f"skipped {o.plan.path}: open in {', '.join(map(str, o.held))};"
                " close it and run redact again"
            )
        elif o.error or o.left:
            failed = True
            out.append(f"failed {o.plan.path}: {o.error or 'a value is still in ' + str(o.left)}")
        else:
            out.append(f"redacted {o.plan.path}: {o.changed} lines or rows changed")
    if saved is not None and saved.saved:
        out.append(f"originals backed up as {saved.id}: gate history restore {saved.id}")
    _report(
        as_json,
        {
            "backup": saved.id if saved and saved.saved else None,
            "stores": [
                {
                    **_plan(o.plan),
                    "changed": o.changed,
                    "held_by": [str(h) for h in o.held],
                    "error": o.error,
                }
                for o in outcomes
            ],
        },
        out,
    )
    sys.exit(1 if failed else 0)


def _plan(p: redact.Plan) -> dict[str, Any]:
    return {
        "path": str(p.path),
        "agent": str(p.agent),
        "form": str(p.form),
        "copies": p.findings,
        "values": len(p.values),
    }


def _report(as_json: bool, obj: dict[str, Any], lines: list[str]) -> None:
    if as_json:
        echo_json(obj)
    else:
        for line in lines:
            click.echo(line)


@history_group.command("restore")
@click.argument("backup_id", required=False)
@click.option("--list", "list_only", is_flag=True, help="List the backups.")
@json_option
def restore_cmd(backup_id: str | None, list_only: bool, as_json: bool) -> None:
    """Put back the originals a redaction backed up (the latest, or BACKUP_ID)."""
    data = dirs.data_dir()
    ids = backup.listing(data)
    if list_only or not ids:
        _report(as_json, {"backups": ids}, ids or ["no history backups"])
        return
    chosen = backup_id or ids[-1]
    try:
        saved = backup.load(data, chosen)
    except (ValueError, OSError) as exc:
        raise GateError(str(exc), where=chosen) from exc
    from gate.history.holders import holders

    if held := holders([s.path for s in saved]):
        raise GateError(
            f"open in {', '.join(map(str, held))}; close it and run restore again", where=chosen
        )
    done = backup.restore(saved)
    _report(
        as_json,
        {"backup": chosen, "restored": [str(p) for p in done]},
        [f"restored {p}" for p in done],
    )


COMMANDS = (history_group,)
