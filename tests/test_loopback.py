"""The fake servers listen as deep as real providers do: socketserver's backlog of 5
overflows under a burst of connections (the kernel's SYN cookies then reset some), which
made `test_sixteen_sdk_sessions_at_once` fail now and then with "server closed connection"."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from fake_provider import FakeProvider
from gate.demo.fake import FakeProvider as DemoProvider

pytestmark = pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2's ss")


def backlog(port: int) -> int:
    """The listen backlog the kernel holds for 127.0.0.1:port (ss's Send-Q of a listener)."""
    out = subprocess.run(
        ["ss", "-Hltn", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out and out[0] == "LISTEN", out
    return int(out[2])


def test_the_test_fakes_listen_with_a_deep_backlog() -> None:
    fake = FakeProvider().start()
    try:
        assert backlog(fake.server.server_address[1]) >= 512
    finally:
        fake.stop()


def test_the_demo_provider_listens_with_a_deep_backlog() -> None:
    demo = DemoProvider().start()
    try:
        assert backlog(int(demo.url.rsplit(":", 1)[1])) >= 512
    finally:
        demo.stop()
