"""`gate serve`, `gate run` and `gate env`: run the gate and point agents at it."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import click

from gate import dirs, log, runs
from gate.agents import registry
from gate.ask.client import ControlClient
from gate.ask.terminal import Notices
from gate.cli import ca as forward_cli
from gate.cli import exits
from gate.cli.common import load_config
from gate.config import Config, TlsSettings, base_url
from gate.errors import GateError
from gate.lock.run import locked, wait
from gate.rules.layers import RECHECK_AFTER, PolicyStore, find_root

if TYPE_CHECKING:
    from gate.proxy.server import BackgroundGate

upstream_option = click.option(
    "--upstream",
    "upstreams",
    multiple=True,
    metavar="NAME=URL",
    help="Route /NAME/... to URL (repeatable); overrides a default or config.yaml entry.",
)
forward_option = click.option(
    "--forward",
    is_flag=True,
    help="Forward (MITM) mode: an HTTP proxy that screens model hosts and follows egress:"
    " for every other host (docs/forward.md).",
)
no_ask_option = click.option(
    "--no-ask",
    is_flag=True,
    help="Never park a request to ask: ask findings get ask.default at once (headless, CI).",
)


@click.command("serve")
@click.option("--host", default=None, help="Address to listen on (default 127.0.0.1).")
@click.option("--port", type=int, default=None, help="Port to listen on (default 8787).")
@upstream_option
@no_ask_option
@forward_option
@click.option(
    "--events",
    is_flag=True,
    help="Write NDJSON events (questions, answers) to stderr; stdout stays clean.",
)
@click.option(
    "--project",
    "projects",
    multiple=True,
    type=click.Path(exists=True, file_okay=False, resolve_path=True),
    help="A project whose denied files are withheld from requests that state no"
    " working directory (repeatable; see docs/guarantees.md).",
)
@click.option(
    "--tls-cert",
    type=click.Path(exists=True, dir_okay=False, resolve_path=True),
    help="Serve HTTPS with this PEM certificate chain (tls.cert; docs/team.md).",
)
@click.option(
    "--tls-key",
    type=click.Path(exists=True, dir_okay=False, resolve_path=True),
    help="The private key of --tls-cert (tls.key).",
)
def serve_cmd(
    host: str | None,
    port: int | None,
    upstreams: tuple[str, ...],
    no_ask: bool,
    forward: bool,
    events: bool,
    projects: tuple[str, ...],
    tls_cert: str | None,
    tls_key: str | None,
) -> None:
    """Run the gate in the foreground until Ctrl-C.

    Agents point their provider base URL at http://HOST:PORT/NAME, e.g.
    ANTHROPIC_BASE_URL=http://127.0.0.1:8787/anthropic. When a request holds a finding
    the policy says to ask about, it waits for `gate approve/redact/block ID` or the
    approval page whose URL is printed at start.

    Listening anywhere but loopback serves other machines: that needs TLS (--tls-cert and
    --tls-key, or tls: in config.yaml) and users (`gate users add`), see docs/team.md.
    """
    from gate.ask import client
    from gate.ask import events as event_stream
    from gate.proxy import ca, team
    from gate.proxy.server import serve_forever
    from gate.served import Listening, read_server_file

    config = _ask_config(load_config(host, port, upstreams), no_ask)
    config = replace(
        config,
        projects=_known_projects(config.projects, projects),
        forward=forward,
        tls=_tls(config, tls_cert, tls_key),
    )
    data = dirs.private_dir(dirs.data_dir())
    # One long-lived gate per data dir: two would share one audit, token and memory, and
    # `gate run`, `gate watch` and the CLI would talk to either.
    if (running := read_server_file(data)) and _healthy(running.base_url, data, cert=running.cert):
        raise GateError(
            f"a gate already serves this data dir at {running.base_url}",
            where=str(data),
            hint="use that gate, stop it first, or set GATE_DATA_DIR to another directory",
        )
    # With --events, stderr carries only the NDJSON events; the log goes to gate.log.
    log.configure(file=data / "gate.log", stderr=not events)
    if events:
        event_stream.configure(sys.stderr)
    token = client.load_or_create_token(data)
    PolicyStore(warn=False)  # fail before listening when a rule file is malformed

    def ready(listening: Listening) -> None:
        click.echo(f"gate listening on {listening.base_url}  (data: {data})")
        for name, up in sorted(config.upstreams.items()):
            click.echo(f"  {listening.base_url}/{name:<12} → {up.url}")
        if team.is_shared(config):
            click.echo(
                f"Shared: agents use {listening.base_url}/_user/<agent token>/anthropic"
                " (or the x-gate-user-token header); `gate users` manages tokens."
            )
            click.echo(f"Approval page: {listening.base_url}/_gate/ui?token=<person token>")
            sys.stdout.flush()
            return
        if forward:
            click.echo(f"Forward proxy: {listening.base_url}  (CA: {ca.paths(data).cert})")
            click.echo(
                'Point an agent at it: eval "$(gate env --forward)", or gate run --forward -- CMD'
            )
        else:
            click.echo(f"Claude Code: export ANTHROPIC_BASE_URL={listening.base_url}/anthropic")
        if config.ask.mode == "never":
            click.echo(f"Not asking: ask findings get {config.ask.default} at once.")
        else:
            click.echo(f"Approval page: {_loopback(listening.base_url)}/_gate/ui?token={token}")
        click.echo(f"Console: {_loopback(listening.base_url)}/_gate/console?token={token}")
        sys.stdout.flush()

    try:
        serve_forever(config, data, on_ready=ready)
    except OSError as exc:
        raise GateError(
            f"cannot listen on {config.host}:{config.port}: {exc}",
            hint="use --port to pick another port",
        ) from exc


def _tls(config: Config, cert: str | None, key: str | None) -> TlsSettings:
    """--tls-cert and --tls-key, over config.yaml's tls: (both, or neither)."""
    if (cert is None) != (key is None):
        raise click.UsageError("--tls-cert and --tls-key go together")
    if cert is None:
        return config.tls
    return replace(config.tls, cert=cert, key=key)


def _known_projects(configured: tuple[str, ...], given: tuple[str, ...]) -> tuple[str, ...]:
    """Configured projects, `--project` ones, and the repository gate serve starts in (a
    directory holding `.git` or `.gate`, not any directory it happens to start in)."""
    here = find_root(os.getcwd())
    started = (
        (here,) if any(os.path.exists(os.path.join(here, d)) for d in (".git", ".gate")) else ()
    )
    return tuple(dict.fromkeys((*configured, *given, *started)))


# Options after COMMAND are its own: `gate run claude --help` is Claude Code's help.
@click.command(
    "run", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False}
)
@click.option("--agent", default=None, help="Agent to wire (default: from the command name).")
@upstream_option
@no_ask_option
@forward_option
@click.option(
    "--lock",
    is_flag=True,
    help="Run COMMAND in its own namespaces: gate is its only way out; forward mode"
    " unless --reverse (docs/lock.md).",
)
@click.option(
    "--reverse", is_flag=True, help="With --lock: wire the agent by base URL instead of the proxy."
)
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run_cmd(
    agent: str | None,
    upstreams: tuple[str, ...],
    no_ask: bool,
    forward: bool,
    lock: bool,
    reverse: bool,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND with its provider traffic going through a gate.

    With --lock, COMMAND runs in its own user, network, mount and pid namespaces: its only
    way out is the gate (forward mode, or base URLs with --reverse), and it cannot see
    gate's data or answer gate's questions.

    Reuses a gate already serving this data dir, or starts one for the run and stops it
    after. Returns COMMAND's exit code. Example: gate run -- claude

    Recognised by name: claude, codex, opencode, gemini, copilot, aider. Each is wired
    without editing its config files (see docs/agents.md).
    """
    try:
        spec = registry.get(agent) if agent else registry.detect(list(command))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    if reverse and not lock:
        raise click.UsageError("--reverse goes with --lock (without it, reverse is the default)")
    forward = forward or (lock and not reverse)  # locked: forward mode unless told otherwise
    upstreams += _inherited(spec, upstreams)
    data = dirs.private_dir(dirs.data_dir())
    log.configure(file=data / "gate.log", stderr=False)
    config = replace(_ask_config(load_config(upstreams=upstreams), no_ask), forward=forward)
    if not forward:  # forward mode wires nothing by base URL: every host goes via the proxy
        _check_routes(spec, config)
    # The run's project root, anchored now: what the agent creates later never moves it.
    root = find_root(os.getcwd())
    # A malformed rule file stops us here, before the agent starts.
    PolicyStore(warn=False).policy_for(root)
    # --no-ask needs a gate of its own: a shared `gate serve` asks as it was told to.
    base, started = _find_or_start(config, data, bool(upstreams) or no_ask)
    run = runs.register(data, os.getcwd(), spec.name, root)
    run_base = f"{base}/_run/{run.id}"
    if forward:
        env = {
            **registry.without_forward_vars(os.environ),
            **forward_cli.child_env(data, base, run.id),
        }
        argv = list(command)
    else:
        env = {**os.environ, **spec.env(run_base)}
        argv = registry.command(spec, list(command), run_base)
    notices = Notices(run.id, lambda: ControlClient.find(data).pending(), sys.stderr).start()
    try:
        key = config.decisions.team_key_file
        code = locked(argv, env, base, (key,) if key else ()) if lock else _run_child(argv, env)
    finally:
        notices.stop()
        runs.unregister(data, run)
        if started is not None:
            started.stop()
        _summary(data, run.id)
    sys.exit(code)


def _summary(data: Path, run_id: str) -> None:
    """One paragraph on stderr once the agent is gone: what this run sent and withheld."""
    from gate.audit import summary
    from gate.audit.store import AuditStore

    try:
        text = summary.of_run(AuditStore(data / "audit.db", reader=True), run_id)
    except Exception as exc:  # the agent's exit code matters more than the summary
        text = f"gate: no summary of this run ({type(exc).__name__}); see gate log"
    click.echo(text, err=True)


@click.command("env")
@click.option("--agent", default="generic", show_default=True, help="Agent to wire.")
@click.option(
    "--forward",
    is_flag=True,
    help="Print forward mode's proxy and CA exports (for a `gate serve --forward`).",
)
@click.option(
    "--no-check",
    is_flag=True,
    help="Do not ask the gate whether it answers (a shell profile, before `gate serve`).",
)
def env_cmd(agent: str, forward: bool, no_check: bool) -> None:
    """Print shell exports that point an agent at the gate: eval "$(gate env)".

    For an agent wired by flags (codex), prints an alias that adds them. Exits 3 when no
    gate answers where the exports point (they are printed all the same, the reason on
    stderr, so `eval` still works and a gate started later is found).
    """
    from gate.served import read_server_file

    config = load_config()
    running = read_server_file(dirs.data_dir())
    base = running.base_url if running else base_url(config.host, config.port)
    if forward:
        exports = forward_cli.exports(dirs.private_dir(dirs.data_dir()), base)
        spec = None
    else:
        try:
            spec = registry.get(agent)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
        if missing := sorted(registry.routes(spec) - set(config.upstreams)):
            click.echo(
                f"gate: {spec.name} is wired to /{missing[0]}, but gate has no upstream"
                f" {missing[0]!r}; add it under upstreams: in config.yaml",
                err=True,
            )
        exports = _agent_exports(spec, base)
    click.echo(exports)
    if no_check:
        return
    # Exports that point at nothing make the agent fail later, far from the cause.
    if (info := _health(_loopback(base), running.cert if running else None)) is None:
        click.echo(
            f"gate: no gate answers at {base} (these exports point there): start one with"
            f" `gate serve{' --forward' if forward else ''}`, or pass --no-check",
            err=True,
        )
        sys.exit(exits.UNREACHABLE)
    if forward and info.get("forward") is not True:
        click.echo(
            f"gate: the gate at {base} is not in forward mode; start it with"
            " `gate serve --forward`",
            err=True,
        )
        sys.exit(exits.UNREACHABLE)


def _agent_exports(spec: registry.Agent, base: str) -> str:
    """The shell lines that wire an agent to base: exports, and for an agent wired by flags
    only (Codex) an alias that adds them to every call in this shell."""
    lines = [f"export {key}={shlex.quote(value)}" for key, value in spec.env(base).items()]
    if spec.args is not None:
        for name in spec.commands[:1]:
            lines.append(f"alias {name}={shlex.quote(shlex.join([name, *spec.args(base)]))}")
    return "\n".join(lines)


def _inherited(spec: registry.Agent, upstreams: tuple[str, ...]) -> tuple[str, ...]:
    """Base URLs the user set for this agent, as upstreams (unless named on the line)."""
    named = frozenset(u.partition("=")[0].strip() for u in upstreams)
    try:
        inherited = registry.inherited_upstreams(spec, os.environ, named)
    except ValueError as exc:
        raise GateError(str(exc)) from exc
    out: tuple[str, ...] = ()
    for name, (var, url) in sorted(inherited.items()):
        if name not in named and not _is_gate(url):
            click.echo(f"gate: {var} is set, so /{name} forwards to {url}", err=True)
            out += (f"{name}={url}",)
    return out


def _ask_config(config: Config, no_ask: bool) -> Config:
    """Apply --no-ask, and refuse a bad decision helper before anything starts."""
    from gate.ask.helper import check_helper_url

    if config.decisions.helper_url:
        check_helper_url(config.decisions.helper_url, config.decisions.allow_remote)
    return replace(config, ask=replace(config.ask, mode="never")) if no_ask else config


def _loopback(base_url: str) -> str:
    """The page's URL on a name the gate accepts as its own Host (not 0.0.0.0)."""
    return base_url.replace("://0.0.0.0:", "://127.0.0.1:").replace("://[::]:", "://[::1]:")


def _check_routes(spec: registry.Agent, config: Config) -> None:
    """Fail before the agent starts when it would be wired to an upstream gate lacks."""
    missing = sorted(registry.routes(spec) - set(config.upstreams))
    if missing:
        raise GateError(
            f"{spec.name} is wired to /{missing[0]}, but gate has no upstream {missing[0]!r}",
            hint=spec.setup or f"pass --upstream {missing[0]}=URL",
        )


def _find_or_start(
    config: Config, data: Path, must_start: bool
) -> tuple[str, BackgroundGate | None]:
    from gate.proxy.server import BackgroundGate
    from gate.served import read_server_file

    running = read_server_file(data)
    if (
        running
        and not must_start
        and _healthy(running.base_url, data, config.forward, local=True, cert=running.cert)
    ):
        return running.base_url, None
    try:
        gate = BackgroundGate(config, data, rules_recheck=RECHECK_AFTER)
        listening = gate.start()
    except OSError:  # a TimeoutError too
        # The configured port is taken (by another gate or program): use any free port.
        gate = BackgroundGate(replace(config, port=0), data, rules_recheck=RECHECK_AFTER)
        listening = gate.start()
    return listening.base_url, gate


def _is_gate(url: str) -> bool:
    """Whether a base URL points at a gate (left alone) rather than a real upstream."""
    parts = urlsplit(url)
    if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
        return False
    return _health(f"{parts.scheme}://{parts.netloc}") is not None


def _health(base_url: str, cert: str | None = None) -> dict[str, object] | None:
    """What the gate at base_url says of itself, or None when no gate answers there."""
    from gate.ask.client import fetch_health

    try:
        info = fetch_health(base_url, cert)
    except (OSError, ValueError):
        return None
    return info if isinstance(info, dict) and info.get("ok") is True else None


def _healthy(
    base_url: str, data: Path, forward: bool = False, local: bool = False, cert: str | None = None
) -> bool:
    """The gate of this data dir (in forward mode, when forward mode is wanted; with
    `local`, one that is not shared, which a `gate run` agent could not use in plain HTTP
    without a user's token): the instance its /_gate/health names is the one its
    server.json names."""
    from gate.served import server_instance

    info, instance = _health(base_url, cert), server_instance(data)
    return (
        info is not None
        and instance is not None
        and info.get("instance") == instance
        and (not forward or info.get("forward") is True)
        and (not local or info.get("shared") is not True)
    )


def _run_child(argv: list[str], env: dict[str, str]) -> int:
    try:
        child = subprocess.Popen(argv, env=env)  # inherits the terminal: interactive agents work
    except FileNotFoundError:
        click.echo(f"gate: command not found: {argv[0]}", err=True)
        return 127
    except PermissionError:
        click.echo(f"gate: permission denied: {argv[0]}", err=True)
        return 126
    return wait(child)


COMMANDS = (serve_cmd, run_cmd, env_cmd)
