"""`gate serve` as a user runs it: prints its base URLs, serves, stops cleanly on a signal."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
import pytest

from fake_provider import FakeProvider
from loopback import served_port


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "gate", "serve", *args],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_serve_prints_urls_forwards_and_stops_cleanly(
    provider: FakeProvider, gate_dirs: dict[str, Path], sig: signal.Signals
) -> None:
    proc = _start("--port", "0", "--upstream", f"anthropic={provider.url}")
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        port = served_port(first)
        assert first.startswith(f"gate listening on http://127.0.0.1:{port}")
        lines = [proc.stdout.readline() for _ in range(5)]  # one per built-in upstream
        assert any(
            f"http://127.0.0.1:{port}/anthropic" in ln and provider.url in ln for ln in lines
        )
        assert any("/openai" in ln and "https://api.openai.com" in ln for ln in lines)
        info = json.loads((gate_dirs["data"] / "server.json").read_text())
        assert info["port"] == port and info["pid"] == proc.pid
        resp = httpx.post(
            f"http://127.0.0.1:{port}/anthropic/v1/messages",
            json={"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]},
            headers={"x-api-key": "k"},
        )
        assert resp.status_code == 200 and provider.seen
        proc.send_signal(sig)
        assert proc.wait(timeout=15) == 0
    finally:
        proc.kill()
        proc.communicate()
    assert not (gate_dirs["data"] / "server.json").exists()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/_gate/health")


def test_serve_on_a_busy_port_says_so(gate_dirs: dict[str, Path]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = _start("--port", str(port))
        _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in err and "--port" in err


def test_a_base_url_brackets_an_ipv6_host() -> None:
    from gate.proxy.server import Listening

    assert Listening("::1", 8787).base_url == "http://[::1]:8787"
    assert Listening("127.0.0.1", 8787).base_url == "http://127.0.0.1:8787"


def test_a_second_serve_on_the_same_data_dir_refuses_naming_the_first(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    first = _start("--port", "0", "--upstream", f"anthropic={provider.url}")
    try:
        assert first.stdout is not None
        port = served_port(first.stdout.readline())
        second = _start("--port", "0")
        _out, err = second.communicate(timeout=30)
        assert second.returncode == 1
        assert f"a gate already serves this data dir at http://127.0.0.1:{port}" in err
        assert str(gate_dirs["data"]) in err
        env = subprocess.run(
            [sys.executable, "-m", "gate", "env"],
            capture_output=True,
            text=True,
            env=os.environ,
            timeout=30,
        )
        assert "no gate answers" not in env.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=20)


def test_gate_env_exits_3_when_no_gate_answers(gate_dirs: dict[str, Path]) -> None:
    # Nothing listens on this config's port (the default one may be another gate's).
    gate_dirs["config"].mkdir(exist_ok=True)
    port = _free_port()
    (gate_dirs["config"] / "config.yaml").write_text(f"port: {port}\n")
    base = f"http://127.0.0.1:{port}"
    for forward in ((), ("--forward",)):
        env = _gate_env(*forward)
        # Cannot reach (3), said on stderr; stdout holds only the exports, so `eval` works.
        assert env.returncode == 3, env
        assert f"no gate answers at {base}" in env.stderr
        assert f"`gate serve{' --forward' if forward else ''}`" in env.stderr
        assert all(ln.startswith(("export ", "unset ")) for ln in env.stdout.splitlines())
        assert base in env.stdout
        assert _gate_env("--no-check", *forward).returncode == 0
    wired = subprocess.run(
        [
            "sh",
            "-c",
            f'eval "$({sys.executable} -m gate env --agent claude-code)";'
            ' echo "url=$ANTHROPIC_BASE_URL"',
        ],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=30,
    )
    assert f"url={base}/anthropic" in wired.stdout and "no gate answers" in wired.stderr


def _gate_env(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gate", "env", *args],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=30,
    )


def test_gate_env_forward_says_a_plain_gate_is_not_in_forward_mode(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    gate = _start("--port", "0", "--upstream", f"anthropic={provider.url}")
    try:
        assert gate.stdout is not None and gate.stdout.readline().startswith("gate listening")
        assert _gate_env().returncode == 0
        env = _gate_env("--forward")
        assert env.returncode == 3 and "is not in forward mode" in env.stderr
    finally:
        gate.send_signal(signal.SIGINT)
        gate.communicate(timeout=20)
