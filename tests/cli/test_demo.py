"""`gate demo`: one command, no key, no network; answered in a terminal or not at all."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(120)
DEMO = [sys.executable, "-m", "gate", "demo"]


def _temp_dir(out: str) -> Path:
    match = re.search(r"The temp dir (\S+) is removed", out)
    assert match, out
    return Path(match.group(1))


def test_demo_without_a_terminal_answers_redact_and_cleans_up(gate_dirs: dict[str, Path]) -> None:
    proc = subprocess.run(
        DEMO, capture_output=True, text=True, timeout=90, stdin=subprocess.DEVNULL, check=False
    )
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert "[gate: content withheld. Read of " in out and "Read(./.env)" in out
    assert re.search(r"gate approve\|redact\|block q[0-9a-f]+", out)
    assert "(not a terminal: answering redact)" in out
    assert "[gate: redacted github-token" in out
    assert "on the wire: neither the .env value nor the token." in out
    assert "$ gate show 1" in out and "$ gate show 2" in out and "modified" in out
    assert not _temp_dir(out).exists()
    # The user's own gate dirs were never touched.
    assert not gate_dirs["data"].exists() and not gate_dirs["config"].exists()


def _read_until(fd: int, text: str, seen: bytearray, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while text.encode() not in seen:
        assert time.monotonic() < deadline, f"no {text!r} in {seen.decode(errors='replace')}"
        ready, _, _ = select.select([fd], [], [], 1)
        if ready:
            try:
                seen += os.read(fd, 4096)
            except OSError:  # the child closed the terminal
                break


def test_demo_in_a_terminal_asks_and_takes_the_answer(gate_dirs: dict[str, Path]) -> None:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(DEMO, stdin=follower, stdout=follower, stderr=follower, close_fds=True)
    os.close(follower)
    seen = bytearray()
    try:
        _read_until(leader, "your answer", seen)
        os.write(leader, b"block\r")
        _read_until(leader, "is removed", seen)
        assert proc.wait(timeout=30) == 0
    finally:
        proc.kill()
        os.close(leader)
    out = seen.decode(errors="replace").replace("\r\n", "\n")
    assert "gate blocked the request: the model provider got nothing" in out
    assert "blocked" in out.split("What gate kept", 1)[1]
    assert not _temp_dir(out).exists()
