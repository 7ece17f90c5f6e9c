"""Start a locked agent: the launcher, the bridge, and why a lock could not be built."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

from gate.errors import GateError
from gate.lock import scope
from gate.lock.bridge import Bridge
from gate.lock.plan import Plan

LAUNCHER = (sys.executable, "-P", "-m", "gate.lock.launcher")  # -P: never the project's code


class LockUnavailable(GateError):
    """The lock could not be built; the agent never ran."""


def locked(
    argv: Sequence[str], env: Mapping[str, str], base: str, private: Sequence[Path] = ()
) -> int:
    """`gate run --lock`: run `argv` locked, bridged to the gate at `base`; `private` files
    must be hidden from it (scope.plan_for)."""
    parts = urlsplit(base)
    port = parts.port or 80
    plan = scope.plan_for(argv, port, os.getcwd(), env, private)
    try:
        return run(
            plan,
            env,
            "127.0.0.1"
            if parts.hostname in ("0.0.0.0", None)  # noqa: S104
            else parts.hostname,
            port,
        )
    finally:
        scope.remove_placeholders(plan.made)


def run(
    plan: Plan,
    env: Mapping[str, str],
    gate_host: str,
    gate_port: int,
    launcher: Sequence[str] = LAUNCHER,
) -> int:
    """Run `plan.argv` locked, its port bridged to the gate; its exit code.

    Raises LockUnavailable (cause and fix) when the namespaces cannot be made: never runs
    the agent unlocked. `launcher` is a seam for fault injection.
    """
    if not sys.platform.startswith("linux"):
        raise LockUnavailable(
            "gate run --lock needs Linux namespaces",
            hint="run the agent on Linux (or in a Linux VM), or without --lock",
        )
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    with ours:
        child = subprocess.Popen(
            [*launcher, str(theirs.fileno())], env=dict(env), pass_fds=(theirs.fileno(),)
        )
        theirs.close()
        ours.send(plan.to_json())
        reply, fds = _receive(ours)
    if not reply.get("ok"):
        child.wait()
        for fd in fds:
            os.close(fd)
        raise explain(reply)
    bridge = Bridge(socket.socket(fileno=fds[0]), gate_host, gate_port)
    bridge.start()
    try:
        return wait(child)
    finally:
        bridge.stop()


def _receive(chan: socket.socket) -> tuple[dict[str, object], list[int]]:
    try:
        data, fds, _flags, _addr = socket.recv_fds(chan, 65536, 1)
        reply = json.loads(data) if data else {"step": "launcher", "error": "it exited early"}
    except (OSError, ValueError) as exc:
        reply = {"step": "launcher", "error": str(exc)}
        fds = []
    return (reply if isinstance(reply, dict) else {"step": "launcher"}), fds


def wait(child: subprocess.Popen[bytes]) -> int:
    """`child`'s exit code (128+N for a signal), forwarding SIGTERM and SIGHUP to it."""

    def forward(signum: int, _frame: object) -> None:
        child.send_signal(signum)

    # Ctrl-C reaches the child through the terminal; we keep running until the child decides
    # to exit, so the gate outlives every request it makes.
    old = {s: signal.signal(s, forward) for s in (signal.SIGTERM, signal.SIGHUP)}
    old[signal.SIGINT] = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code = child.wait()
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
    return 128 - code if code < 0 else code


def _sysctl(name: str) -> str | None:
    try:
        return Path("/proc/sys", *name.split(".")).read_text(encoding="ascii").strip()
    except OSError:
        return None


def explain(
    reply: Mapping[str, object], sysctl: Callable[[str], str | None] = _sysctl
) -> LockUnavailable:
    """The cause and the fix for a lock step that failed, from what the kernel said and
    the kernel settings that explain it (`sysctl` reads one)."""
    step, errno, error = reply.get("step"), reply.get("errno"), reply.get("error", "")
    cause = f"cannot build the lock ({step}: {error})"
    if step == "unshare" and sysctl("user.max_user_namespaces") == "0":
        return LockUnavailable(
            f"{cause}: user namespaces are turned off (user.max_user_namespaces = 0)",
            hint="sudo sysctl -w user.max_user_namespaces=15000",
        )
    if step == "unshare" and sysctl("kernel.unprivileged_userns_clone") == "0":
        return LockUnavailable(
            f"{cause}: unprivileged user namespaces are turned off",
            hint="sudo sysctl -w kernel.unprivileged_userns_clone=1",
        )
    if (
        step in ("unshare", "setgroups", "uid_map", "gid_map", "loopback")
        and sysctl("kernel.apparmor_restrict_unprivileged_userns") == "1"
    ):
        return LockUnavailable(
            f"{cause}: AppArmor restricts unprivileged user namespaces (Ubuntu 23.10+)",
            hint="allow them for gate's Python with an AppArmor profile that says `userns,`"
            " (see docs/lock.md), or sudo sysctl -w"
            " kernel.apparmor_restrict_unprivileged_userns=0",
        )
    if step == "unshare" and errno == 1:
        return LockUnavailable(
            f"{cause}: this system or container does not allow new user"
            " namespaces (a seccomp or capability restriction)",
            hint="in Docker/Podman run the container with"
            " --security-opt seccomp=unconfined (or on the host);"
            " see docs/lock.md",
        )
    if step == "mount /proc":
        return LockUnavailable(
            f"{cause}: a new /proc cannot be mounted here (a container that masks parts of /proc)",
            hint="run the container with --security-opt"
            " systempaths=unconfined, or run gate on the host",
        )
    return LockUnavailable(cause, hint="see docs/lock.md; `gate doctor` checks namespaces")
