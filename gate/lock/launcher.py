"""Inside the lock: enter the namespaces, mount, open the bridge port, drop privileges, exec.

Run by `gate run --lock` as `python -m gate.lock.launcher FD`, FD being its end of a
socketpair: the plan arrives on it, and either the listening socket (SCM_RIGHTS) or why the
lock could not be built goes back. The agent is exec'd only after every step succeeded.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from gate.lock import LOCKED_MARK, kernel
from gate.lock.plan import Plan

NAMESPACES = kernel.CLONE_NEWUSER | kernel.CLONE_NEWNET | kernel.CLONE_NEWNS | kernel.CLONE_NEWPID
NOT_BUILT = 125  # exit code: the lock was not built, the agent never ran


class Step(Exception):
    """A step of building the lock failed: its name and the OS error."""

    def __init__(self, step: str, exc: OSError):
        super().__init__(step)
        self.step, self.errno, self.error = step, exc.errno or 0, str(exc)


@contextmanager
def _step(name: str) -> Iterator[None]:
    try:
        yield
    except OSError as exc:
        raise Step(name, exc) from exc


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="ascii") as f:
        f.write(text)


def enter(plan: Plan, unshare: Callable[[int], None]) -> None:
    """New user, network, mount and pid namespaces; our uid and gid map to themselves."""
    with _step("unshare"):
        unshare(NAMESPACES)
    with _step("setgroups"):
        _write("/proc/self/setgroups", "deny")
    with _step("uid_map"):
        _write("/proc/self/uid_map", f"{plan.uid} {plan.uid} 1\n")
    with _step("gid_map"):
        _write("/proc/self/gid_map", f"{plan.gid} {plan.gid} 1\n")


def build(plan: Plan) -> None:
    """The mounts, as pid 1 of the new pid namespace (so the new /proc shows only us)."""
    with _step("mount"):
        kernel.mount(None, "/", None, kernel.MS_REC | kernel.MS_PRIVATE)
    # Opened and read before anything is covered: bound or written back in after.
    cwd = os.getcwd()
    keep = {k: os.open(k, os.O_PATH | os.O_DIRECTORY) for k in plan.keep if os.path.isdir(k)}
    shown = {p: Path(p).read_bytes() for p in plan.shown if os.path.isfile(p)}
    with _step("mount /proc"):
        kernel.mount("proc", "/proc", "proc", kernel.MS_NOSUID | kernel.MS_NODEV | kernel.MS_NOEXEC)
    for d in plan.fresh:
        if os.path.isdir(d):
            with _step("mount"):
                kernel.mount("tmpfs", d, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, "mode=1777")
    for path, fd in keep.items():
        if any(_under(path, d) for d in plan.fresh):
            os.makedirs(path, exist_ok=True)
            with _step("mount"):
                kernel.mount(f"/proc/self/fd/{fd}", path, None, kernel.MS_BIND | kernel.MS_REC)
        os.close(fd)
    for d in plan.hidden:
        os.makedirs(d, mode=0o700, exist_ok=True)
        with _step("mount"):
            kernel.mount("tmpfs", d, "tmpfs", kernel.MS_NOSUID | kernel.MS_NODEV, "mode=0700")
        for path, data in shown.items():
            if _under(path, d):
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_bytes(data)
        Path(d, LOCKED_MARK).write_text("inside gate run --lock\n", encoding="ascii")
        with _step("remount"):
            kernel.remount_readonly(d)
    for path in plan.readonly:
        if os.path.exists(path):
            with _step("mount"):
                kernel.mount(path, path, None, kernel.MS_BIND | kernel.MS_REC)
            with _step("remount"):
                kernel.remount_readonly(path)
    os.chdir(cwd)  # the same path, now in the lock's own tree


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def listen(port: int) -> socket.socket:
    """The only way out: a loopback port in the new network namespace."""
    with _step("loopback"):
        kernel.loopback_up()
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with _step("listen"):
        sock.bind(("127.0.0.1", port))
    sock.listen(128)
    return sock


def _exec(plan: Plan) -> None:
    argv = plan.argv
    try:
        kernel.drop_privileges()
    except OSError as exc:
        print(f"gate: cannot drop privileges in the lock: {exc}", file=sys.stderr)
        os._exit(NOT_BUILT)
    try:
        os.execvp(argv[0], list(argv))  # noqa: S606 (the agent's own command line)
    except FileNotFoundError:
        print(
            f"gate: command not found: {argv[0]}{_hidden_by_lock(argv[0], plan)}", file=sys.stderr
        )
        os._exit(127)
    except PermissionError:
        print(f"gate: permission denied: {argv[0]}", file=sys.stderr)
        os._exit(126)


def _hidden_by_lock(command: str, plan: Plan) -> str:
    """Why a command the host may have is missing in the lock: where it is looked for lies
    under a directory the lock mounts empty (`plan.fresh`: /tmp, /run) and outside what it
    binds back (the project, home). Empty when that is not the case."""
    if "/" in command:
        places = [os.path.abspath(command)]
    else:
        places = [os.path.join(d or ".", command) for d in os.environ.get("PATH", "").split(":")]
    for place in places:
        top = next((t for t in plan.fresh if _under(place, t)), None)
        if top is not None and not any(_under(place, k) for k in plan.keep):
            return (
                f" (looked for in {os.path.dirname(place)}: the lock mounts an empty {top}"
                " over the host's, so install the agent outside it; docs/lock.md)"
            )
    return ""


def _wait_for(pid: int) -> int:
    """Forward termination signals to `pid`, reap every child, return `pid`'s exit code."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the terminal sends it to the agent too

    def forward(signum: int, _frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):  # it exited meanwhile
            os.kill(pid, signum)

    for s in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, forward)
    while True:
        try:
            child, status = os.wait()
        except ChildProcessError:
            return NOT_BUILT
        if child == pid:
            return os.waitstatus_to_exitcode(status)


def _init(plan: Plan, chan: socket.socket) -> int:
    """Pid 1 of the lock: build it, hand the port out, start the agent, reap orphans."""
    try:
        build(plan)
        sock = listen(plan.port)
    except Step as exc:
        _report(chan, {"ok": False, "step": exc.step, "errno": exc.errno, "error": exc.error})
        return NOT_BUILT
    except OSError as exc:  # a file the plan names (a dir to make, a file to show)
        _report(chan, {"ok": False, "step": "build", "errno": exc.errno or 0, "error": str(exc)})
        return NOT_BUILT
    socket.send_fds(chan, [json.dumps({"ok": True}).encode()], [sock.fileno()])
    sock.close()
    chan.close()
    pid = os.fork()
    if pid == 0:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        _exec(plan)
    code = _wait_for(pid)
    return 128 - code if code < 0 else code


def _report(chan: socket.socket, message: dict[str, object]) -> None:
    chan.send(json.dumps(message).encode())


def _read_plan(chan: socket.socket) -> Plan:
    data = chan.recv(1 << 20)  # one SOCK_SEQPACKET message
    if not data:
        raise SystemExit(NOT_BUILT)
    return Plan.from_json(data)


def main(fd: int, unshare: Callable[[int], None] = kernel.unshare) -> int:
    """Build the lock and run the agent in it; `unshare` is a seam for fault injection."""
    chan = socket.socket(fileno=fd)
    plan = _read_plan(chan)
    try:
        enter(plan, unshare)
    except Step as exc:
        _report(chan, {"ok": False, "step": exc.step, "errno": exc.errno, "error": exc.error})
        return NOT_BUILT
    pid = os.fork()  # the first child is pid 1 of the new pid namespace
    if pid == 0:
        os._exit(_init(plan, chan))
    chan.close()
    code = _wait_for(pid)
    return 128 - code if code < 0 else code


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1])))
