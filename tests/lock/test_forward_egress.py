"""Forward mode for a locked agent: no relay to hosts gate does not screen, loopback above all."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mitmproxy.test import taddons, tflow

from gate.audit.store import AuditStore
from gate.config import Config, EgressSettings
from gate.lock import BRIDGE_SOURCE
from gate.proxy.forward import ForwardAddon


def _connect(addon: ForwardAddon, peer: str, host: str, port: int) -> tflow.http.HTTPFlow:
    flow = tflow.tflow()
    flow.client_conn.peername = (peer, 40000)
    flow.request.method, flow.request.host, flow.request.port = "CONNECT", host, port
    asyncio.run(addon.http_connect(flow))
    return flow


@pytest.mark.parametrize(
    ("host", "port"),
    [("127.0.0.1", 5432), ("localhost", 8787), ("10.0.0.7", 22), ("example.com", 443)],
)
def test_a_locked_agent_gets_no_tunnel_to_an_unscreened_host(
    gate_dirs: dict[str, Path], host: str, port: int
) -> None:
    audit = AuditStore(gate_dirs["data"] / "audit.db")
    addon = ForwardAddon(Config(forward=True), gate_dirs["data"], audit)  # tunnel-and-log
    with taddons.context(addon):
        # Outside the lock the default tunnels (and logs); through the lock it refuses.
        assert _connect(addon, "127.0.0.1", host, port).response is None
        locked = _connect(addon, BRIDGE_SOURCE, host, port)
    assert locked.response is not None and locked.response.status_code == 403
    assert b"inside gate run --lock" in locked.response.content
    audit.close()


def test_the_allow_list_still_reaches_a_locked_agent(gate_dirs: dict[str, Path]) -> None:
    audit = AuditStore(gate_dirs["data"] / "audit.db")
    config = Config(forward=True, egress=EgressSettings(allow=("*.pypi.org",)))
    addon = ForwardAddon(config, gate_dirs["data"], audit)
    with taddons.context(addon):
        assert _connect(addon, BRIDGE_SOURCE, "files.pypi.org", 443).response is None
        assert _connect(addon, BRIDGE_SOURCE, "pypi.org.evil.test", 443).response is not None
    audit.close()


def test_a_tunnel_s_audit_row_is_written_off_the_loop(gate_dirs: dict[str, Path]) -> None:
    # While the audit's write lock is held (a large row being written), a CONNECT's row
    # waits on a thread: the loop keeps running, and the tunnel opens once the row is in.
    import sqlite3
    import sys

    from gate.audit import tunnels
    from gate.config import AuditSettings

    audit = AuditStore(gate_dirs["data"] / "audit.db", AuditSettings(lock_timeout_ms=60_000))
    addon = ForwardAddon(Config(forward=True), gate_dirs["data"], audit)
    held = sqlite3.connect(gate_dirs["data"] / "audit.db", timeout=30, isolation_level=None)
    held.execute("BEGIN IMMEDIATE")

    def writing() -> bool:
        for frame in sys._current_frames().values():
            f = frame
            while f is not None:
                if f.f_code is tunnels.opened.__code__:
                    return True
                f = f.f_back
        return False

    async def main() -> tflow.http.HTTPFlow:
        flow = tflow.tflow()
        flow.client_conn.peername = ("127.0.0.1", 40000)
        flow.request.method, flow.request.host, flow.request.port = "CONNECT", "pypi.org", 443
        task = asyncio.ensure_future(addon.http_connect(flow))
        ticks = 0
        while not writing():  # the loop runs on while the row waits for the lock
            ticks += 1
            assert ticks < 2000, "the tunnel's row never reached the audit"
            await asyncio.sleep(0.01)
        assert not task.done()
        held.execute("COMMIT")
        await task
        return flow

    with taddons.context(addon):
        flow = asyncio.run(main())
    held.close()
    assert flow.response is None
    assert [r["host"] for r in tunnels.rows(audit)] == ["pypi.org"]
    audit.close()
