"""Forward mode decides a model host's CONNECT and a request routed to screening on the
event loop; only what writes an audit row (a tunnel, a relay, a refusal) hops to a thread.

A hook that never leaves the loop finishes at its coroutine's first step: nothing it awaits
suspends it. One that hops to a thread is still waiting after that step.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from mitmproxy.test import taddons, tflow

from ask.ask_kit import github_token
from gate.audit import tunnels
from gate.audit.store import AuditStore
from gate.config import Config, EgressDefault, EgressSettings
from gate.proxy.forward import ForwardAddon


def _finishes_in_one_step(hook: Coroutine[Any, Any, None]) -> bool:
    """Whether the hook returns without suspending once (so it never waited on a thread)."""

    async def probe() -> bool:
        task = asyncio.get_running_loop().create_task(hook)
        # One pass of the loop runs the task's first step; a thread hop suspends it there.
        await asyncio.sleep(0)
        done = task.done()
        await task  # let a suspended hook finish (its thread's work is quick here)
        return done

    return asyncio.run(probe())


def _flow(method: str, host: str, port: int, path: str = "/") -> tflow.http.HTTPFlow:
    flow = tflow.tflow()
    flow.client_conn.peername = ("127.0.0.1", 40000)
    req = flow.request
    req.method, req.host, req.port, req.path = method, host, port, path
    req.headers["host"] = host
    return flow


@pytest.fixture
def addon(gate_dirs: dict[str, Path]) -> Any:
    audit = AuditStore(gate_dirs["data"] / "audit.db")
    forward = ForwardAddon(Config(forward=True), gate_dirs["data"], audit)  # tunnel-and-log
    with taddons.context(forward):
        yield forward
    audit.close()


def test_a_model_host_s_connect_is_decided_on_the_loop(addon: ForwardAddon) -> None:
    flow = _flow("CONNECT", "api.anthropic.com", 443)
    assert _finishes_in_one_step(addon.http_connect(flow))
    assert flow.response is None  # TLS ends in gate: each request inside is screened


def test_another_host_s_connect_writes_its_tunnel_row_on_a_thread(addon: ForwardAddon) -> None:
    flow = _flow("CONNECT", "pypi.org", 443)
    assert not _finishes_in_one_step(addon.http_connect(flow))
    assert flow.response is None  # tunnelled (and logged), not refused


def test_a_request_to_a_model_host_is_routed_on_the_loop(addon: ForwardAddon) -> None:
    flow = _flow("POST", "api.anthropic.com", 443, "/v1/messages")
    assert _finishes_in_one_step(addon.request(flow))
    route = flow.metadata["gate_route"]
    assert (route.upstream.name, route.path) == ("anthropic", "/v1/messages")
    assert flow.response is None


def test_a_request_gate_does_not_screen_is_decided_on_a_thread(addon: ForwardAddon) -> None:
    flow = _flow("GET", "example.com", 80, "/")
    assert not _finishes_in_one_step(addon.request(flow))
    assert "gate_route" not in flow.metadata


# -- the fail-closed paths of forward mode's hooks ---------------------------------------


def _run(hook: Coroutine[Any, Any, None]) -> None:
    asyncio.run(hook)  # type: ignore[arg-type]


@pytest.fixture
def blocking(gate_dirs: dict[str, Path]) -> Any:
    """Forward mode with egress `block`, pypi.org allowed."""
    audit = AuditStore(gate_dirs["data"] / "audit.db")
    egress = EgressSettings(default=EgressDefault.BLOCK, allow=("pypi.org",))
    forward = ForwardAddon(Config(forward=True, egress=egress), gate_dirs["data"], audit)
    with taddons.context(forward):
        yield forward
    audit.close()


def test_a_host_egress_blocks_is_refused_saying_why_and_recorded(blocking: ForwardAddon) -> None:
    flow = _flow("CONNECT", "example.com", 443)
    _run(blocking.http_connect(flow))
    assert flow.response is not None and flow.response.status_code == 403
    assert b"not on egress.allow" in flow.response.content
    [row] = tunnels.rows(blocking.audit)
    assert (row["host"], row["kind"]) == ("example.com", "blocked")
    allowed = _flow("CONNECT", "pypi.org", 443)
    _run(blocking.http_connect(allowed))
    assert allowed.response is None  # the allow list's host is tunnelled


def test_a_host_name_holding_a_token_is_refused_and_never_written_down(
    addon: ForwardAddon,
) -> None:
    """A name leaves in DNS and the TLS server name: one that holds a secret is refused
    unread, and the audit keeps a placeholder."""
    token = github_token()
    flow = _flow("CONNECT", f"{token.lower()}.example.com", 443)
    _run(addon.http_connect(flow))
    assert flow.response is not None and flow.response.status_code == 403
    [row] = tunnels.rows(addon.audit)
    assert row["kind"] == "blocked" and token.lower() not in json.dumps(row)


class NoTunnels(AuditStore):
    """An audit whose connection is lost once open: no tunnel row can be written."""

    lost = False

    def conn(self) -> Any:
        if self.lost:
            raise sqlite3.OperationalError("unable to open database file")
        return super().conn()


def _lost(path: Path) -> NoTunnels:
    audit = NoTunnels(path)
    audit.lost = True
    return audit


@pytest.mark.parametrize(
    ("method", "host", "port", "status", "words"),
    [
        ("CONNECT", "pypi.org", 443, 502, b"could not decide"),
        ("GET", "example.com", 80, 500, b"was not sent"),
    ],
    ids=["tunnel", "request"],
)
def test_a_connection_whose_row_cannot_be_written_is_refused(
    gate_dirs: dict[str, Path], method: str, host: str, port: int, status: int, words: bytes
) -> None:
    audit = _lost(gate_dirs["data"] / "audit.db")
    forward = ForwardAddon(Config(forward=True), gate_dirs["data"], audit)
    flow = _flow(method, host, port)
    hook = forward.http_connect if method == "CONNECT" else forward.request
    try:
        with taddons.context(forward):
            _run(hook(flow))
    finally:
        audit.lost = False
        audit.close()
    assert flow.response is not None and flow.response.status_code == status
    assert words in flow.response.content
