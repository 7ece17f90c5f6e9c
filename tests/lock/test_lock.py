"""`gate run --lock`: a probe run as the agent tries every way around gate, and fails."""

from __future__ import annotations

import json
import os
import shutil
import socket
import socketserver
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from socketserver import BaseRequestHandler
from typing import Any

import pytest

import gate as gate_package
from ask.ask_kit import github_token
from conftest import fake_secret
from fake_provider import FakeProvider
from gate.ask.client import ControlClient
from gate.errors import GateError
from gate.lock import scope
from gate.lock.plan import Plan
from gate.lock.run import run
from gate.proxy import ca
from loopback import LoopbackServer

PROBE = Path(__file__).with_name("probe.py")
pytestmark = pytest.mark.timeout(180)


class Listener(LoopbackServer):
    """A host loopback service the locked agent must not reach."""

    def __init__(self) -> None:
        self.serve(BaseRequestHandler, socketserver.TCPServer)

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])


def _project(gate_dirs: dict[str, Path]) -> tuple[Path, str]:
    project, home, config = gate_dirs["project"], gate_dirs["home"], gate_dirs["config"]
    secret = fake_secret("env-")
    (project / ".env").write_text(f"API_TOKEN={secret}\n")
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./secrets/**)\n")
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text('{"permissions": {"deny": []}}')
    (home / ".claude").mkdir()
    (home / ".claude" / "settings.json").write_text('{"permissions": {"deny": []}}')
    config.mkdir(exist_ok=True)
    (config / "rules.yaml").write_text("deny:\n  - Read(~/.aws/**)\n")
    # The test answers the probe's question itself: gate must not settle it first.
    (config / "config.yaml").write_text("ask:\n  timeout_seconds: 86400\n")
    return project, secret


# Far past what a loaded machine needs (about 15 s at load 5): a wait this long is a hang,
# reported with what the run printed rather than left to the suite's timeout.
QUESTION_WAIT = 150.0


def _wait_for_question(
    data: Path, proc: subprocess.Popen[str], replied: Path, printed: Path
) -> dict[str, object]:
    """The question the probe's request parked: waited for as long as the run lives and
    that request is out, up to QUESTION_WAIT."""
    deadline, last = time.monotonic() + QUESTION_WAIT, "none"
    while proc.poll() is None:
        if replied.exists():
            raise AssertionError(f"the probe's request came back unparked: {replied.read_text()}")
        try:
            if pending := ControlClient.find(data).pending():
                return pending[0]
        except GateError as exc:  # the run's gate is not up yet
            last = str(exc)
        if time.monotonic() > deadline:
            raise AssertionError(
                f"no question parked in {QUESTION_WAIT:.0f} s; last control error: {last};"
                f" the run printed:\n{printed.read_text()[-4000:]}"
            )
        time.sleep(0.1)
    raise AssertionError(f"the run ended before a question was parked (rc {proc.returncode})")


def _wait_for_file(path: Path, proc: subprocess.Popen[str]) -> None:
    while not path.exists():
        assert proc.poll() is None, f"the run ended first (rc {proc.returncode})"
        time.sleep(0.1)


# Forward mode once hung here about one run in five under load (the probe's question never
# parked). The suspected cause, a probe forking a child while its other thread held the
# dynamic loader's lock, was removed in 9328cc5; since then it passed every run: 35 of 35
# then, and this session 46 of 46 (16 with two at a time, 30 with three at a time beside
# two CPU burners, load 5) and in every full run. Should it hang again, the wait below
# fails with what the gate and the probe printed instead of running into the timeout.
@pytest.mark.parametrize("mode", ["forward", "reverse"])
def test_the_locked_agent_reaches_only_gate_and_cannot_answer_it(
    provider: FakeProvider, gate_dirs: dict[str, Path], tmp_path: Path, mode: str
) -> None:
    project, secret = _project(gate_dirs)
    token = github_token()
    other = socket.socket(socket.AF_UNIX)  # like tmux's or ssh-agent's socket, outside
    other.bind(str(tmp_path / "agent.sock"))
    other.listen(1)
    data, config, home = gate_dirs["data"], gate_dirs["config"], gate_dirs["home"]
    protected = [
        project / ".gate" / "rules.yaml",
        project / ".claude" / "settings.json",
        home / ".claude" / "settings.json",
    ]
    service = Listener()
    try:
        spec = {
            "host_ports": {
                "provider": int(provider.url.rsplit(":", 1)[1]),
                "service": service.port,
            },
            "gate_files": [
                str(data / "control.token"),
                str(data / "audit.db"),
                str(config / "rules.yaml"),
                str(ca.paths(data).key),
                str(data / "secret.key"),
            ],
            "data_dir": str(data),
            "protected": [str(p) for p in protected],
            "created": str(project / ".gate" / "rules.local.yaml"),
            "mounts": [str(project / ".gate"), str(data)],
            "host_pid": os.getpid(),
            "host_socket": str(tmp_path / "agent.sock"),
            "token": token,
            "qid_file": str(project / "qid"),
        }
        out_file = open(tmp_path / "run.out", "w")  # noqa: SIM115 (closed below)
        err_file = open(tmp_path / "run.err", "w")  # noqa: SIM115
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gate",
                "run",
                "--lock",
                *(["--reverse"] if mode == "reverse" else []),
                "--upstream",
                f"anthropic={provider.url}",
                "--",
                sys.executable,
                str(PROBE),
                json.dumps(spec),
            ],
            # Files, not pipes: nobody reads a pipe while the test waits, and a run whose
            # log fills one (64 KiB) blocks before its question parks.
            cwd=project,
            text=True,
            stdout=out_file,
            stderr=err_file,
        )
        try:
            question = _wait_for_question(data, proc, project / "qid.replied", tmp_path / "run.err")
            (project / "qid").write_text(str(question["id"]))
            _wait_for_file(project / "qid.tried", proc)
            # The agent's attempts left the question open; the person answers it.
            still = [q["id"] for q in ControlClient.find(data).pending()]
            ControlClient.find(data).answer(str(question["id"]), "redact")
            proc.wait(timeout=90)
        finally:
            proc.kill()
            proc.wait()
            out_file.close()
            err_file.close()
        stdout, stderr = (tmp_path / "run.out").read_text(), (tmp_path / "run.err").read_text()
    finally:
        service.stop()
        other.close()
    assert proc.returncode == 0, stderr
    out = json.loads(stdout)
    assert still == [question["id"]], out
    assert_isolated(out, spec, protected)
    # Forward mode, the lock's default: no tunnel through gate to a host port either, and
    # the CA certificate (never its key) readable.
    if mode == "forward":
        for name in spec["host_ports"]:
            assert out[f"tunnel {name}"].startswith("HTTP/1.1 403"), out
        assert out["read NODE_EXTRA_CA_CERTS"] == out["read SSL_CERT_FILE"] == "read"
    else:
        assert "tunnel provider" not in out
    assert out["gate approve"].startswith("exit 1") and "--lock" in out["gate approve"], out
    assert out["gate pending"].startswith("exit 1"), out
    assert out["control api"].startswith("HTTP 403"), out
    # Both requests went through gate, screened: the person's redact, the .env withheld.
    assert out["parked reply"].startswith("msg_") and out["env reply"].startswith("msg_"), out
    bodies = [s.body for s in provider.seen]
    assert len(bodies) == 2
    assert all(token.encode() not in b and secret.encode() not in b for b in bodies)
    assert all(b"[gate: " in b for b in bodies)


def assert_isolated(out: dict[str, str], spec: dict[str, Any], protected: list[Path]) -> None:
    """What the probe found: no way out but gate, nothing of gate's, no rule file to edit."""
    for name in (
        *(f"connect {n}" for n in spec["host_ports"]),
        "connect off-machine",
        "dns",
        "socket outside",
    ):
        assert out[name].startswith("refused"), (name, out[name])
    for path in spec["gate_files"]:
        assert out[f"read {path}"].startswith("refused"), out
    # Only the lock's mark, and in forward mode the CA certificate (alone and in the bundle).
    assert "LOCKED" in out["data dir lists"]
    assert set(out["data dir lists"]) <= {
        "LOCKED",
        "ca-bundle.pem",
        "mitmproxy/mitmproxy-ca-cert.pem",
    }, out
    for path in spec["protected"]:
        assert out[f"write {path}"] == "refused: Read-only file system", out
        for how in ("umount", "remount", "unshare umount", "unshare remount"):
            assert not out[f"{how} {path}"].startswith("exit 0"), (how, out[f"{how} {path}"])
        assert out[f"nested umount {path}"] != "unmounted", out
    assert out["nested umount data"] != "unmounted"
    assert out["create"] == "refused: Read-only file system"
    for path in protected:  # and nothing changed on the host
        assert "allow" not in path.read_text()
    assert not Path(spec["created"]).exists()
    for mount in spec["mounts"]:
        assert "WROTE" not in out[f"lift {mount}"], out[f"lift {mount}"]
        assert not Path(mount, "w").exists()
    assert out["host pid"] == "hidden" and out["pids"] < 10, out
    assert out["CapEff"] == out["CapBnd"] == "0000000000000000"
    assert out["NoNewPrivs"] == "1"


NOBODY = 65534
SYSTEM_PYTHON = "/usr/bin/python3"  # one an unprivileged user can run (ours is under /root)


@pytest.mark.skipif(
    os.getuid() != 0 or not shutil.which("setpriv") or not os.access(SYSTEM_PYTHON, os.X_OK),
    reason="needs root to become an unprivileged user, setpriv and a system Python",
)
def test_an_unprivileged_user_gets_the_same_lock() -> None:
    """The rootless path: the launcher runs as uid 65534, who maps only itself."""
    base = Path(tempfile.mkdtemp(prefix="gate-lock-"))
    try:
        dirs = {n: base / n for n in ("data", "config", "home", "project")}
        for d in dirs.values():
            d.mkdir()
        (dirs["data"] / "control.token").write_text(fake_secret())
        (dirs["project"] / ".gate").mkdir()
        rules = dirs["project"] / ".gate" / "rules.yaml"
        rules.write_text("deny:\n  - Read(./secrets/**)\n")
        (dirs["project"] / ".env").write_text(f"API_TOKEN={fake_secret()}\n")
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(base / "agent.sock"))
        sock.listen(1)
        for p in (base, *base.rglob("*")):
            os.chown(p, NOBODY, NOBODY)
        service, gate = Listener(), Listener()
        spec = {
            "host_ports": {"service": service.port},
            "gate_files": [str(dirs["data"] / "control.token")],
            "data_dir": str(dirs["data"]),
            "protected": [str(rules)],
            "created": str(dirs["project"] / ".gate" / "rules.local.yaml"),
            "mounts": [str(dirs["project"] / ".gate"), str(dirs["data"])],
            "host_pid": os.getpid(),
            "host_socket": str(base / "agent.sock"),
            "send": False,
        }
        out_file = dirs["project"] / "out.json"
        plan = Plan(
            argv=("sh", "-c", f'{SYSTEM_PYTHON} {PROBE} "$0" > {out_file}', json.dumps(spec)),
            port=gate.port,
            hidden=(str(dirs["data"]), str(dirs["config"])),
            readonly=(str(dirs["project"] / ".gate"),),
            # the probe and gate's code stay reachable wherever the checkout is
            keep=(
                str(dirs["project"]),
                str(dirs["home"]),
                str(Path(gate_package.__file__).parent.parent),
            ),
            uid=NOBODY,
            gid=NOBODY,
        )
        launcher = (
            "setpriv",
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            "env",
            f"PYTHONPATH={Path(gate_package.__file__).parent.parent}",
            SYSTEM_PYTHON,
            "-P",
            "-m",
            "gate.lock.launcher",
        )
        env = {"PATH": os.environ["PATH"], "HOME": str(dirs["home"])}
        old = os.getcwd()
        os.chdir(dirs["project"])
        try:
            code = run(plan, env, "127.0.0.1", gate.port, launcher=launcher)
        finally:
            os.chdir(old)
            service.stop()
            gate.stop()
            sock.close()
        assert code == 0
        out = json.loads(out_file.read_text())
        assert_isolated(out, spec, [rules])
        # Unprivileged, a nested user namespace is allowed; the kernel keeps our mounts.
        assert out[f"nested umount {rules}"] == "umount refused", out
        assert "write failed" not in out[f"unshare umount {rules}"], out
        assert "write failed" not in out[f"unshare remount {rules}"], out
    finally:
        shutil.rmtree(base)


def test_an_agent_installed_under_tmp_is_named_as_hidden_by_the_lock(
    gate_dirs: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    """An agent the host has under /tmp (an `npm install --prefix /tmp/x`) is not inside
    the lock, which mounts an empty /tmp: the error says so instead of a bare "not found",
    whether the command is a path or a name found through PATH; a command missing
    elsewhere gets the bare message."""
    host_bin = Path(tempfile.mkdtemp(prefix="gate-agent-", dir="/tmp")) / "bin"
    host_bin.mkdir()
    agent = host_bin / "fake-agent"
    agent.write_text("#!/bin/sh\nexit 0\n")
    agent.chmod(0o755)
    gate = Listener()
    try:
        cases = [
            ((str(agent),), os.environ, True),
            (("fake-agent",), {**os.environ, "PATH": f"{host_bin}:{os.environ['PATH']}"}, True),
            (("/usr/lib/gate-no-such-agent",), os.environ, False),
        ]
        for argv, env, hidden in cases:
            plan = scope.plan_for(argv, gate.port, str(gate_dirs["project"]), env)
            assert run(plan, env, "127.0.0.1", gate.port) == 127
            err = capfd.readouterr().err
            assert f"gate: command not found: {argv[0]}" in err
            assert ("the lock mounts an empty /tmp" in err) is hidden, err
            if hidden:
                assert f"looked for in {host_bin}" in err, err
    finally:
        gate.stop()
        shutil.rmtree(host_bin.parent)


def test_an_agent_that_exits_at_once_leaves_no_error(
    gate_dirs: dict[str, Path], capfd: pytest.CaptureFixture[str]
) -> None:
    """The bridge stops cleanly however soon the agent exits (it once raised in its thread
    when stopped before it was listening)."""
    gate = Listener()
    try:
        for code in (0, 3, 0, 3, 0):
            plan = scope.plan_for(
                ("sh", "-c", f"exit {code}"), gate.port, str(gate_dirs["project"]), os.environ
            )
            assert run(plan, os.environ, "127.0.0.1", gate.port) == code
    finally:
        gate.stop()
    assert "Traceback" not in capfd.readouterr().err
