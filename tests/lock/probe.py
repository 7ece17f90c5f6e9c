"""The agent in a lock: tries every way around gate it can, and reports what worked.

Run by tests/lock as `gate run --lock -- python probe.py SPEC`; SPEC is a JSON object with
the host ports to try, gate's files, the project's protected files and a host pid. Prints
one JSON object: each attempt → what happened.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any


def connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=2):
            return "connected"
    except OSError as exc:
        return f"refused: {exc.strerror or exc}"


def read(path: str) -> str:
    try:
        Path(path).read_bytes()
        return "read"
    except OSError as exc:
        return f"refused: {exc.strerror}"


def write(path: str) -> str:
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write("\nsecrets:\n  high: allow\n")
        return "written"
    except OSError as exc:
        return f"refused: {exc.strerror}"


def run(*argv: str) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)
    return f"exit {proc.returncode}: {(proc.stdout + proc.stderr).strip()[-300:]}"


def control(port: int, qid: str) -> str:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/_gate/api/pending/{qid}",
        method="POST",
        data=b'{"answer": "allow"}',
        headers={"authorization": "Bearer guess", "content-type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=5) as resp:
            return f"HTTP {resp.status}"
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}: {exc.read().decode()[:200]}"
    except OSError as exc:
        return f"refused: {exc}"


_NESTED = """
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
if libc.unshare(0x10000000 | 0x20000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
    os._exit(10)
os._exit(0 if libc.umount2(sys.argv[1].encode(), 2) == 0 else 20)  # MNT_DETACH
"""


def nested_umount(path: str) -> str:
    """A new user and mount namespace of our own, where we are root: try to lift a mount.
    In a fresh interpreter, not a fork: the probe's other thread may hold the dynamic
    loader's lock (importing the SDK) at the fork, and a forked child that looks up a
    libc symbol would then wait on it for ever (a suspected cause of the intermittent
    forward-mode hang)."""
    code = subprocess.run([sys.executable, "-c", _NESTED, path], check=False).returncode
    return {0: "unmounted", 10: "no nested namespace", 20: "umount refused"}.get(
        code, f"exit {code}"
    )


def status(field: str) -> str:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return line.split(":", 1)[1].strip()
    return ""


def send(call: dict[str, Any], result: str, timeout: float | None = 60) -> str:
    """One screened turn through the lock: a tool call and its result, as an agent sends.
    `timeout=None`: wait as long as it takes (a parked request the test answers itself)."""
    import anthropic

    client = anthropic.Anthropic(api_key="sk-ant-fake", max_retries=0, timeout=timeout)
    turn = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", **call}]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result}],
        },
    ]
    try:
        return client.messages.create(model="claude-test", max_tokens=8, messages=turn).id
    except anthropic.APIError as exc:
        return f"error: {exc}"


def main() -> None:
    spec: dict[str, Any] = json.loads(sys.argv[1])
    out: dict[str, Any] = {}
    parked: dict[str, str] = {}
    if spec.get("token"):  # a request gate parks to ask the person; we try to answer it
        # No client timeout: the test answers it once our attempts are done, however long
        # they take on a loaded machine (a timeout would withdraw the question first).
        def ask() -> None:
            parked["reply"] = send(
                {"name": "Bash", "input": {"command": "env"}},
                f"GITHUB_TOKEN={spec['token']}\n",
                timeout=None,
            )
            # Tells the test it came back (answered, or never parked: then it stops waiting).
            Path(spec["qid_file"] + ".replied").write_text(parked["reply"])

        asking = threading.Thread(target=ask)
        asking.start()
    for name, port in spec["host_ports"].items():
        out[f"connect {name}"] = connect("127.0.0.1", port)
    out["connect off-machine"] = connect("192.0.2.1", 443)
    try:
        socket.getaddrinfo("example.com", 443)
        out["dns"] = "resolved"
    except OSError as exc:
        out["dns"] = f"refused: {exc}"
    for path in spec["gate_files"]:
        out[f"read {path}"] = read(path)
    data = Path(spec["data_dir"])
    out["data dir lists"] = sorted(str(p.relative_to(data)) for p in data.rglob("*") if p.is_file())
    for path in spec["protected"]:
        out[f"write {path}"] = write(path)
        out[f"umount {path}"] = run("umount", path)
        out[f"remount {path}"] = run("mount", "-o", "remount,rw,bind", path)
        out[f"unshare umount {path}"] = run("unshare", "-Urm", "umount", path)
        out[f"unshare remount {path}"] = run(
            "unshare", "-Urm", "mount", "-o", "remount,bind,rw", path
        )
        out[f"nested umount {path}"] = nested_umount(path)
    out["create"] = write(spec["created"])
    for mount in spec["mounts"]:  # as root of a namespace of our own: make it writable
        out[f"lift {mount}"] = run(
            "unshare",
            "-Urm",
            "sh",
            "-c",
            f"mount -o remount,bind,rw {mount} && echo x > {mount}/w && echo WROTE",
        )
    out["nested umount data"] = nested_umount(spec["data_dir"])
    out["host pid"] = "visible" if Path(f"/proc/{spec['host_pid']}").exists() else "hidden"
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(spec["host_pid"], 0)
        out["host pid"] = "signalable"
    if os.environ.get("HTTPS_PROXY"):  # forward mode: gate must not be a relay either
        for name, port in spec["host_ports"].items():
            out[f"tunnel {name}"] = connect_through_proxy("127.0.0.1", port)
        for var in ("NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE"):
            out[f"read {var}"] = read(os.environ[var])
    out["pids"] = len([p for p in os.listdir("/proc") if p.isdigit()])
    out["socket outside"] = connect_unix(spec["host_socket"])
    out["CapEff"], out["CapBnd"] = status("CapEff"), status("CapBnd")
    out["NoNewPrivs"] = status("NoNewPrivs")
    if spec.get("token"):
        out.update(answer(spec, Path(spec["qid_file"]), asking.is_alive))
        Path(spec["qid_file"] + ".tried").write_text("tried")
        asking.join()  # until the test answers the question
        out["parked reply"] = parked.get("reply", "none")
    env_file = Path(".env").resolve()
    if spec.get("send", True):
        out["env reply"] = send(
            {"name": "Read", "input": {"file_path": str(env_file)}}, env_file.read_text()
        )
    print(json.dumps(out))


def connect_unix(path: str) -> str:
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(path)
            return "connected"
    except OSError as exc:
        return f"refused: {exc.strerror}"


def answer(spec: dict[str, Any], qid_file: Path, waiting: Callable[[], bool]) -> dict[str, str]:
    """Wait for the test to name the question our parked request raised (however long it
    takes: the test writes it once the question is parked, or gives up when the request
    came back unparked); try to answer."""
    while not (qid_file.exists() and (qid := qid_file.read_text().strip())):
        if not waiting():
            return {"answer": "the parked request came back before a question id"}
        time.sleep(0.05)
    gate = [sys.executable, "-m", "gate"]
    return {
        "gate approve": run(*gate, "approve", qid),
        "gate pending": run(*gate, "pending"),
        "control api": control(gate_port(), qid),
    }


def gate_port() -> int:
    """The lock's way out: the port in the proxy or base URL `gate run` gave us."""
    url = os.environ.get("HTTPS_PROXY") or os.environ["ANTHROPIC_BASE_URL"]
    return int(url.split("://", 1)[1].split("/", 1)[0].rsplit(":", 1)[1])


def connect_through_proxy(host: str, port: int) -> str:
    """Ask gate, as a forward proxy, for a tunnel to `host:port`."""
    try:
        with socket.create_connection(("127.0.0.1", gate_port()), timeout=5) as s:
            s.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
            return s.recv(200).split(b"\r\n", 1)[0].decode()
    except OSError as exc:
        return f"refused: {exc}"


if __name__ == "__main__":
    main()
