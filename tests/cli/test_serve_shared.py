"""`gate serve` as a shared gate: HTTPS with the given certificate, users' tokens required."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx2 as httpx
from team_kit import make_pki

from fake_provider import FakeProvider
from gate.users import Users
from loopback import served_port

MSG = {"model": "m", "max_tokens": 1, "messages": [{"role": "user", "content": "hi"}]}


def _gate(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        capture_output=True,
        text=True,
        env=os.environ,
        timeout=60,
        check=False,
    )


def test_serve_shared_speaks_https_and_wants_a_token(
    provider: FakeProvider, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    pki = make_pki(tmp_path / "pki")
    cert, key = pki.issue("gate", server=True)
    token = Users(gate_dirs["data"]).add("alice").agent_token
    gate_dirs["config"].mkdir()
    (gate_dirs["config"] / "config.yaml").write_text(
        f"shared: true\nprojects: [{gate_dirs['project']}]\n"
    )
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gate",
            "serve",
            "--port",
            "0",  # the gate's choice: one picked beforehand may be taken meanwhile
            "--upstream",
            f"anthropic={provider.url}",
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(key),
        ],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        base = f"https://127.0.0.1:{served_port(first)}"
        assert first.startswith(f"gate listening on {base}")
        printed = "".join(proc.stdout.readline() for _ in range(7))
        assert f"{base}/_user/<agent token>/anthropic" in printed
        assert "?token=<person token>" in printed and token not in printed
        with httpx.Client(verify=pki.ssl_context()) as client:
            assert client.post(f"{base}/anthropic/v1/messages", json=MSG).status_code == 401
            sent = client.post(f"{base}/_user/{token}/anthropic/v1/messages", json=MSG)
            assert sent.status_code == 200, sent.text
        assert provider.seen[-1].path == "/v1/messages"
        # The CLI on this machine finds it over TLS, checked against the certificate it serves.
        env = _gate("env", "--agent", "claude")
        assert env.returncode == 0, env.stderr
        assert f"ANTHROPIC_BASE_URL={base}/anthropic" in env.stdout
        again = _gate("serve", "--port", "0", "--tls-cert", str(cert), "--tls-key", str(key))
        assert again.returncode != 0 and f"already serves this data dir at {base}" in again.stderr
        proc.terminate()
        assert proc.wait(timeout=15) == 0
    finally:
        proc.kill()
        _, err = proc.communicate()
    assert token not in err
    assert token not in (gate_dirs["data"] / "gate.log").read_text()
