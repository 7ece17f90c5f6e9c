"""Each check of `gate doctor`: one line, ok, warn or fail, and the fix when it fails."""

from __future__ import annotations

import json
import os
import socket
import urllib.request
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
    from gate.proxy.server import read_server_file

    name = "gate reachable"
    running = read_server_file(data)
    if running is None:
        return Check(name, Status.WARN, f"no `gate serve` for data dir {data}; `gate run`"
                     " starts a gate of its own", "start one with `gate serve` to share it")
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback only
    try:
        with opener.open(f"{running.base_url}/_gate/health", timeout=3) as resp:
            info = json.loads(resp.read())
    except (OSError, ValueError) as exc:
        return Check(name, Status.FAIL, f"the gate at {running.base_url} does not answer"
                     f" ({exc})", "restart it: `gate serve`")
    if not isinstance(info, dict) or info.get("data_dir") != str(data):
        return Check(name, Status.FAIL, f"{running.base_url} is not the gate of {data}",
                     "stop the other program on that port, or `gate serve --port N`")
    return Check(name, Status.OK, f"{running.base_url} serves {data}")


def rules_load(cwd: str) -> Check:
    from gate.rules.layers import PolicyStore, repository_root

    name = "rules load"
    root = repository_root(cwd)
    try:
        policy = PolicyStore(warn=False).policy_for(root)
    except GateError as exc:
        where = f"{exc.where}: " if exc.where else ""
        return Check(name, Status.FAIL, where + exc.message,
                     exc.hint or "fix the file and line named")
    if policy.warnings:
        return Check(name, Status.WARN, "; ".join(policy.warnings),
                     "fix the files named (gate skips what it cannot read)")
    return Check(name, Status.OK, f"{len(policy.rules)} rules for {root}")


def namespaces(cwd: str, launcher: Sequence[str] | None = None) -> Check:
    """Build a real lock (the same plan `gate run --lock` makes) around `true`; `launcher`
    is a seam for fault injection."""
    from gate.lock import scope
    from gate.lock.run import LAUNCHER, LockUnavailable, run

    name = "namespaces for --lock"
    try:
        code = run(scope.plan_for(("true",), 8787, cwd, os.environ), os.environ,
                   "127.0.0.1", 9, launcher or LAUNCHER)
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
            out.append(Check(f"upstream {name}", Status.FAIL, f"no upstream {name!r}",
                             f"add it under upstreams: in config.yaml or --upstream {name}=URL"))
            continue
        try:
            with socket.create_connection((up.host, up.port), timeout=5):
                pass
        except OSError as exc:
            out.append(Check(f"upstream {name}", Status.FAIL,
                             f"cannot connect to {up.host}:{up.port} ({exc})",
                             "check the network and the URL (config.yaml, --upstream)"))
        else:
            out.append(Check(f"upstream {name}", Status.OK, f"{up.host}:{up.port} accepts"
                             " connections"))
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
        return Check(name, Status.FAIL, f"the self-test did not run ({exc})",
                     "`gate serve` in the foreground shows why a gate cannot start")
    if leaked or seen != 2 or not withheld:
        return Check(name, Status.FAIL, f"{', '.join(leaked) or 'an unscreened turn'} reached"
                     " the fake provider", "your rules allow it: `gate rules` shows them")
    return Check(name, Status.OK, "a .env read and a token in a tool result were withheld"
                 " before the wire")
