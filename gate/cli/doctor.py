"""`gate doctor`: is gate set up to protect this agent here, and if not, what to do."""

from __future__ import annotations

import json
import os
import sys

import click

from gate import dirs, log
from gate.agents import registry
from gate.cli.common import load_config
from gate.cli.serve import upstream_option
from gate.doctor import checks
from gate.doctor.checks import Check, Status


@click.command("doctor")
@click.option("--agent", default=None, help="Check for this agent (claude-code, codex, ...).")
@upstream_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def doctor_cmd(agent: str | None, upstreams: tuple[str, ...], as_json: bool) -> None:
    """Check that gate can protect an agent here, one line per check, with the fix.

    Checks: a gate is reachable, the rules load, the CA for forward mode, namespaces for
    --lock, the upstreams the agent uses answer, and a canary self-test (a fake secret sent
    through a gate to a loopback fake provider, never reaching it). Exits 1 on any fail.
    """
    try:
        spec = registry.get(agent) if agent else None
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    data = dirs.data_dir()
    log.configure(stderr=False)  # the checks' own gate logs nowhere: the lines say it all
    config = load_config(upstreams=upstreams)
    cwd = os.getcwd()
    results = [
        checks.gate_reachable(data),
        checks.rules_load(cwd),
        checks.ca_trusted(data, spec.name if spec else None),
        checks.namespaces(cwd),
    ]
    names = registry.routes(spec) if spec else frozenset(config.upstreams)
    results += checks.upstreams(config, names)
    results.append(checks.canary())
    failed = any(r.status is Status.FAIL for r in results)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "ok": not failed,
                    "agent": spec.name if spec else None,
                    "checks": [r.to_json() for r in results],
                }
            )
        )
    else:
        for r in results:
            _line(r)
    sys.exit(1 if failed else 0)


def _line(r: Check) -> None:
    colour = {Status.OK: "green", Status.WARN: "yellow", Status.FAIL: "red"}[r.status]
    click.echo(f"{click.style(f'{r.status:<4}', fg=colour)}  {r.name}: {r.detail}")
    if r.fix and r.status is not Status.OK:
        click.echo(f"      fix: {r.fix}")


COMMANDS = (doctor_cmd,)
