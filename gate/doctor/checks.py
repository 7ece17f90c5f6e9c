"""Each check of `gate doctor`: one line, ok, warn or fail, and the fix when it fails."""

from __future__ import annotations

import os
import shutil
import socket
import ssl
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING

from gate.config import Config
from gate.errors import GateError

if TYPE_CHECKING:
    from gate.demo.stage import Stage


class Status(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    detail: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {k: str(v) for k, v in asdict(self).items()}


def gate_reachable(data: Path) -> Check:
    from gate.served import read_server_file, server_instance

    name = "gate reachable"
    running = read_server_file(data)
    if running is None:
        return Check(
            name,
            Status.WARN,
            f"no `gate serve` for data dir {data}; `gate run` starts a gate of its own",
            "start one with `gate serve` to share it",
        )
    from gate.ask.client import fetch_health

    try:
        info = fetch_health(running.base_url, running.cert, timeout=3)
    except (OSError, ValueError) as exc:
        return Check(
            name,
            Status.FAIL,
            f"the gate at {running.base_url} does not answer ({exc})",
            "restart it: `gate serve`",
        )
    # Health names an instance id, never a path: the gate is this data dir's when it names
    # the id this data dir's server.json holds.
    instance = server_instance(data)
    if not isinstance(info, dict) or instance is None or info.get("instance") != instance:
        return Check(
            name,
            Status.FAIL,
            f"{running.base_url} is not the gate of {data}",
            "stop the other program on that port, or `gate serve --port N`",
        )
    return Check(name, Status.OK, f"{running.base_url} serves {data}")


def rules_load(cwd: str) -> Check:
    from gate.rules.layers import PolicyStore, find_root

    name = "rules load"
    root = find_root(cwd)
    try:
        policy = PolicyStore(warn=False).policy_for(root)
    except GateError as exc:
        where = f"{exc.where}: " if exc.where else ""
        return Check(
            name, Status.FAIL, where + exc.message, exc.hint or "fix the file and line named"
        )
    if policy.warnings:
        return Check(
            name,
            Status.WARN,
            "; ".join(policy.warnings),
            "fix the files named (gate skips what it cannot read)",
        )
    return Check(name, Status.OK, f"{len(policy.rules)} rules for {root}")


# How each agent's runtime is told to trust the CA under `gate run --forward`: Node and
# Bun builds read NODE_EXTRA_CA_CERTS (the CA alone); the others a bundle (system roots
# plus the CA) in SSL_CERT_FILE, REQUESTS_CA_BUNDLE or CODEX_CA_CERTIFICATE.
NODE_AGENTS = frozenset({"claude-code", "opencode", "gemini-cli", "copilot"})
_NODE_TLS = """
const s = require("tls").connect({host: "127.0.0.1", port: +process.argv[1],
  servername: "api.anthropic.com"}, () => { console.log("ok"); process.exit(0); });
s.on("error", (e) => { console.log("refused: " + e.message); process.exit(0); });
"""


def ca_trusted(data: Path, agent: str | None) -> Check:
    """The forward-mode CA exists, and a TLS client as the agent's runtime is set up trusts
    a certificate it signed (a loopback server, never a real host)."""
    from gate.proxy import ca
    from gate.proxy.ca_probe import LeafServer

    name = "CA trusted"
    authority = ca.paths(data)
    if not authority.cert.exists():
        return Check(
            name,
            Status.WARN,
            f"no CA in {authority.cert.parent} yet (forward mode makes it on first use)",
            "run `gate serve --forward` once",
        )
    node = agent in NODE_AGENTS
    with LeafServer(data, "api.anthropic.com") as server:
        result = (
            _node_trusts(authority.cert, server.port)
            if node
            else _python_trusts(authority.bundle, server.port)
        )
    runtime = "Node (NODE_EXTRA_CA_CERTS)" if node else "OpenSSL (the CA bundle)"
    if result != "ok":
        return Check(
            name,
            Status.FAIL,
            f"{runtime} does not trust gate's CA: {result}",
            "check NODE_EXTRA_CA_CERTS / SSL_CERT_FILE point at `gate paths`' CA;"
            " `gate run --forward` sets them",
        )
    return Check(name, Status.OK, f"{runtime} trusts {authority.cert}")


def _python_trusts(bundle: Path, port: int) -> str:
    try:
        ctx = ssl.create_default_context(cafile=str(bundle))
        with (
            socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
            ctx.wrap_socket(raw, server_hostname="api.anthropic.com") as tls,
        ):
            tls.recv(2)
    except (OSError, ssl.SSLError) as exc:
        return f"refused: {exc}"
    return "ok"


def _node_trusts(cert: Path, port: int) -> str:
    node = shutil.which("node")
    if node is None:
        return "no `node` on PATH to try with"
    env = {k: v for k, v in os.environ.items() if k != "NODE_OPTIONS"}
    proc = subprocess.run(
        [node, "-e", _NODE_TLS, str(port)],
        capture_output=True,
        text=True,
        timeout=30,
        env={**env, "NODE_EXTRA_CA_CERTS": str(cert)},
        check=False,
    )
    return proc.stdout.strip() or proc.stderr.strip()[-200:]


def namespaces(cwd: str, launcher: Sequence[str] | None = None) -> Check:
    """Build a real lock (the same plan `gate run --lock` makes) around `true`; `launcher`
    is a seam for fault injection."""
    from gate.lock import scope
    from gate.lock.run import LAUNCHER, LockUnavailable, run

    name = "namespaces for --lock"
    try:
        code = run(
            scope.plan_for(("true",), 8787, cwd, os.environ),
            os.environ,
            "127.0.0.1",
            9,
            launcher or LAUNCHER,
        )
    except LockUnavailable as exc:
        return Check(name, Status.FAIL, exc.message, exc.hint or "see docs/lock.md")
    if code != 0:
        return Check(name, Status.FAIL, f"`true` exited {code} in the lock", "see docs/lock.md")
    return Check(name, Status.OK, "user, network, mount and pid namespaces work")


def upstreams(config: Config, names: Iterable[str]) -> list[Check]:
    out = []
    for name in sorted(names):
        up = config.upstreams.get(name)
        if up is None:
            out.append(
                Check(
                    f"upstream {name}",
                    Status.FAIL,
                    f"no upstream {name!r}",
                    f"add it under upstreams: in config.yaml or --upstream {name}=URL",
                )
            )
            continue
        try:
            with socket.create_connection((up.host, up.port), timeout=5):
                pass
        except OSError as exc:
            out.append(
                Check(
                    f"upstream {name}",
                    Status.FAIL,
                    f"cannot connect to {up.host}:{up.port} ({exc})",
                    "check the network and the URL (config.yaml, --upstream)",
                )
            )
        else:
            out.append(
                Check(f"upstream {name}", Status.OK, f"{up.host}:{up.port} accepts connections")
            )
    return out


def canary(stage_class: type[Stage] | None = None) -> Check:
    """A fake secret in a temp project, one scripted turn through a gate to a loopback fake
    provider: the check is on what the fake received. `stage_class` is a seam for tests."""
    from gate.demo.stage import Stage

    name = "canary"
    try:
        with (stage_class or Stage)(ask=False) as stage:
            stage.read_env()
            stage.cat_token_file()
            leaked, seen = stage.leaked(), len(stage.fake.seen)
            withheld = all(b"[gate: " in body for body in stage.fake.seen)
    except (OSError, GateError) as exc:
        return Check(
            name,
            Status.FAIL,
            f"the self-test did not run ({exc})",
            "`gate serve` in the foreground shows why a gate cannot start",
        )
    if leaked or seen != 2 or not withheld:
        return Check(
            name,
            Status.FAIL,
            f"{', '.join(leaked) or 'an unscreened turn'} reached the fake provider",
            "your rules allow it: `gate rules` shows them",
        )
    return Check(
        name, Status.OK, "a .env read and a token in a tool result were withheld before the wire"
    )
