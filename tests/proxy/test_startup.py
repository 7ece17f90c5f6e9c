"""A gate whose start goes wrong stops through gate's own error path, saying why: a port
taken when the listener binds it, an error logged while starting."""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import socket
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from gate.audit.store import AuditStore
from gate.config import AskConfig, Config
from gate.proxy import startup
from gate.proxy.addon import GateAddon
from gate.proxy.server import build_master, serve
from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen
from gate.screen.request import Screens
from gate.screen.secrets import Scanner
from gate.served import Listening

CONFIG = Config(port=0, ask=AskConfig(mode="never"))


@pytest.fixture
def busy_port() -> Iterator[int]:
    """A port another program listens on."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield int(busy.getsockname()[1])


def _no_error_handler_left() -> bool:
    return not any(isinstance(h, startup._Errors) for h in logging.getLogger().handlers)


def test_a_port_taken_when_the_listener_binds_it_is_an_oserror_naming_it(
    busy_port: int, gate_dirs: dict[str, Path]
) -> None:
    """Whatever was checked before (a port free a moment earlier can be taken by another
    program's connection meanwhile), the listener's own bind decides: mitmproxy only logs
    its failure, which used to end the process with 'Error logged during startup'."""
    config = replace(CONFIG, port=busy_port)

    async def run() -> None:
        audit = AuditStore(gate_dirs["data"] / "audit.db")
        screens = Screens(None, SecretScreen(Scanner(), b"unit-test-key"))
        addon = GateAddon(config, gate_dirs["data"], PolicyStore(), audit, screens=screens)
        try:
            await build_master(config, gate_dirs["data"], addon).run()
        finally:
            addon.done()
            audit.close()

    with pytest.raises(OSError) as caught:
        asyncio.run(run())
    assert caught.value.errno == errno.EADDRINUSE
    assert str(caught.value) == f"[Errno {errno.EADDRINUSE}] {os.strerror(errno.EADDRINUSE)}"
    assert _no_error_handler_left()


def test_an_error_logged_while_starting_stops_the_gate_naming_it(
    gate_dirs: dict[str, Path],
) -> None:
    """Fail closed: a hook that raised left the gate half set up (mitmproxy logs it and
    goes on), so the gate does not serve; the error says which, not SystemExit(1)."""

    def broken(listening: Listening) -> None:
        raise RuntimeError("the ready callback broke")

    with pytest.raises(startup.StartFailed, match="the ready callback broke"):
        asyncio.run(serve(CONFIG, gate_dirs["data"], on_ready=broken))
    assert _no_error_handler_left()
