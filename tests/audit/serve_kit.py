"""A real `gate serve` subprocess for the audit's crash and disk-full tests."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable

import httpx2 as httpx

from gate.screen import scan_pool
from loopback import served_port


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start(
    upstream: str, preexec: Callable[[], None] | None = None
) -> tuple[subprocess.Popen[str], str]:
    """Start `gate serve` on a free loopback port; return it once it listens, and its URL."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gate",
            "serve",
            "--port",
            "0",  # the gate's choice: one picked beforehand may be taken meanwhile
            "--upstream",
            f"anthropic={upstream}",
        ],
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=os.environ,
        preexec_fn=preexec,
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("gate listening on"), first + proc.stderr.read()  # type: ignore[union-attr]
    return proc, f"http://127.0.0.1:{served_port(first)}"


def post(base: str, body: bytes, **headers: str) -> httpx.Response:
    # Longer than a screening worker may take before gate screens a large body in place
    # (scan_pool.TIMEOUT, 30 s: a niced worker on a loaded 2-core CI machine can): a
    # client that gives up at the same moment fails a request gate would have answered.
    return httpx.post(
        f"{base}/anthropic/v1/messages",
        content=body,
        timeout=scan_pool.TIMEOUT + 60,
        headers={"content-type": "application/json", "x-api-key": "k", **headers},
    )
