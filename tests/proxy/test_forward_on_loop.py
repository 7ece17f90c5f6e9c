"""Forward mode decides a model host's CONNECT and a request routed to screening on the
event loop; only what writes an audit row (a tunnel, a relay, a refusal) hops to a thread.

A hook that never leaves the loop finishes at its coroutine's first step: nothing it awaits
suspends it. One that hops to a thread is still waiting after that step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from mitmproxy.test import taddons, tflow

from gate.audit.store import AuditStore
from gate.config import Config
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
