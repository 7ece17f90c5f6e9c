"""A data dir gate cannot write: it says so and sends nothing (a real read-only bind mount
and a real full tmpfs, in a user and mount namespace of their own)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest

from fake_provider import FakeProvider

REPO = Path(__file__).resolve().parents[2]


def _namespaces() -> bool:
    try:
        return (
            subprocess.run(["unshare", "-rm", "true"], capture_output=True, timeout=10).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


pytestmark = pytest.mark.skipif(not _namespaces(), reason="needs user and mount namespaces")


def _serve(data: Path, setup: str, provider: FakeProvider) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "GATE_DATA_DIR": str(data),
        "GATE_CONFIG_DIR": str(data.parent / "c"),
        "PYTHONPATH": str(REPO),
    }
    gate = (
        f"exec {shlex.quote(sys.executable)} -m gate serve --port 0 --upstream"
        f" anthropic={provider.url}"
    )
    return subprocess.Popen(
        ["unshare", "-rm", "sh", "-c", f"{setup} && {gate}"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture
def data(tmp_path: Path) -> Iterator[Path]:
    d = tmp_path / "data"
    d.mkdir(mode=0o700)
    yield d


def test_a_read_only_data_dir_stops_gate_at_start_and_says_so(
    data: Path, provider: FakeProvider
) -> None:
    q = shlex.quote(str(data))
    proc = _serve(data, f"mount --bind {q} {q} && mount -o remount,ro,bind {q} {q}", provider)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 3  # cannot write its data dir
    assert "Read-only file system" in err and str(data) in err and "hint:" in err
    assert "Traceback" not in err


def test_a_full_data_dir_blocks_requests_and_says_so(data: Path, provider: FakeProvider) -> None:
    q = shlex.quote(str(data))
    proc = _serve(data, f"mount -t tmpfs -o size=1m tmpfs {q}", provider)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        m = re.search(r"listening on (http://\S+)", line)
        assert m, line
        body = {
            "model": "m",
            "max_tokens": 8,
            "messages": [{"role": "user", "content": os.urandom(1 << 20).hex()}],
        }
        resp = httpx.post(
            f"{m.group(1)}/anthropic/v1/messages",
            content=json.dumps(body),
            headers={"content-type": "application/json"},
            timeout=60,
        )
        assert resp.status_code == 400
        message = resp.json()["error"]["message"]
        assert "could not write the audit record" in message and "free disk space" in message
        assert provider.seen == []
        small = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}
        resp = httpx.post(f"{m.group(1)}/anthropic/v1/messages", json=small, timeout=60)
        assert resp.status_code == 200  # tried afresh: flows again once there is room
    finally:
        proc.terminate()
        proc.communicate(timeout=30)
