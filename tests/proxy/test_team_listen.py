"""A gate listens on loopback only: any other address is refused before anything listens."""

from __future__ import annotations

import subprocess
import sys

import pytest

from gate.errors import ConfigError
from gate.proxy import team


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST"]
)
def test_loopback_is_allowed(host: str) -> None:
    team.check_listen(host)


@pytest.mark.parametrize(
    "host",
    [
        "0.0.0.0",  # noqa: S104 (refused)
        "::",
        "192.168.1.5",
        "10.0.0.1",
        "::ffff:10.0.0.1",
        "fe80::1",
        "gate.example.com",
        "localhost.example.com",
        "127.0.0.1.nip.io",
        "",
    ],
)
def test_every_other_address_is_refused(host: str) -> None:
    with pytest.raises(ConfigError, match="listens only on loopback"):
        team.check_listen(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])  # noqa: S104 (refused)
def test_gate_serve_on_all_interfaces_refuses_to_start(host: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gate", "serve", "--host", host, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "listens only on loopback" in done.stderr and "gate listening" not in done.stdout
