"""Forward mode's relay of what it does not read, driven through its hooks with mitmproxy's
tflow: each request and WebSocket message is screened as opaque text first, and one the
screens cannot decide on is refused (fail closed)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import http
from mitmproxy.test import taddons, tflow
from mitmproxy.websocket import WebSocketMessage
from wsproto.frame_protocol import Opcode

from ask.ask_kit import github_token
from gate.audit import tunnels
from gate.audit.store import AuditStore
from gate.config import Config
from gate.proxy.forward import ForwardAddon
from gate.screen.relayed import Relayed


def _run(hook: Coroutine[Any, Any, None]) -> None:
    asyncio.run(hook)  # type: ignore[arg-type]


def _post(body: bytes, host: str = "example.com") -> http.HTTPFlow:
    flow = tflow.tflow()
    flow.client_conn.peername = ("127.0.0.1", 40000)
    req = flow.request
    req.method, req.scheme, req.host, req.port, req.path = "POST", "http", host, 80, "/up"
    req.headers["host"] = host
    req.content = body
    return flow


class Crashing:
    """A relay screen that fails (on messages only, when `requests_pass`): what it was to
    decide on must not leave."""

    def __init__(self, requests_pass: bool = False) -> None:
        self.requests_pass = requests_pass

    def refusal(self, req: Relayed, root: str | None) -> str | None:
        if self.requests_pass:
            return None
        raise RuntimeError("scanner crashed")

    def message_refusal(self, data: bytes, root: str | None) -> str | None:
        raise RuntimeError("scanner crashed")


@pytest.fixture
def audit(gate_dirs: dict[str, Path]) -> Any:
    store = AuditStore(gate_dirs["data"] / "audit.db")
    yield store
    store.close()


def _addon(audit: AuditStore, data: Path, relay: Any = None) -> ForwardAddon:
    return ForwardAddon(Config(forward=True), data, audit, relay=relay)  # tunnel-and-log


def test_a_secret_in_a_relayed_body_is_refused_and_recorded(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    token = github_token()
    addon = _addon(audit, gate_dirs["data"])
    refused, fine = _post(f"note={token}".encode()), _post(b"note=hello")
    with taddons.context(addon):
        _run(addon.request(refused))
        _run(addon.request(fine))
    assert refused.response is not None and refused.response.status_code == 403
    assert b"the request body holds a likely secret (github-token" in refused.response.content
    assert token.encode() not in refused.response.content
    assert fine.response is None and "gate_passthrough" in fine.metadata
    rows = tunnels.rows(audit)
    assert [r["kind"] for r in rows] == ["http", "blocked"]
    assert token not in json.dumps(rows)


def test_a_relayed_request_gate_cannot_screen_is_refused(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    addon = _addon(audit, gate_dirs["data"], Crashing())
    flow = _post(b"note=hello")
    with taddons.context(addon):
        _run(addon.request(flow))
    assert flow.response is not None and flow.response.status_code == 500
    assert b"was not sent" in flow.response.content
    assert "gate_passthrough" not in flow.metadata


def test_a_relayed_request_with_trailers_is_refused(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """Trailers are headers sent after the body: gate screens what leaves before it does."""
    addon = _addon(audit, gate_dirs["data"])
    flow = _post(b"note=hello")
    flow.request.trailers = http.Headers(x_note="anything")
    with taddons.context(addon):
        _run(addon.request(flow))
    assert flow.response is not None and b"trailers" in flow.response.content


def _websocket(addon: ForwardAddon, *messages: WebSocketMessage) -> list[bool]:
    """Each message through the hook on a WebSocket relayed unread: whether it was dropped."""
    flow = tflow.twebsocketflow()
    flow.client_conn.peername = ("127.0.0.1", 40000)
    flow.request.scheme, flow.request.host, flow.request.port = "http", "example.com", 80
    flow.request.path = "/socket"
    flow.response = None
    assert flow.websocket is not None
    flow.websocket.messages = []
    with taddons.context(addon):
        _run(addon.request(flow))
        assert "gate_passthrough" in flow.metadata and flow.response is None
        for m in messages:
            flow.websocket.messages.append(m)
            _run(addon.websocket_message(flow))
    return [m.dropped for m in messages]


def test_a_relayed_websocket_message_holding_a_secret_is_dropped(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    token = github_token()
    text = Opcode.TEXT
    dropped = _websocket(
        _addon(audit, gate_dirs["data"]),
        WebSocketMessage(text, True, b'{"hello": 1}'),
        WebSocketMessage(text, True, f'{{"t": "{token}"}}'.encode()),
        WebSocketMessage(text, False, f'{{"t": "{token}"}}'.encode()),  # the host's own
        WebSocketMessage(Opcode.BINARY, True, b"\xff\xfe\x00binary"),
    )
    assert dropped == [False, True, False, True]
    reasons = [r["reason"] for r in tunnels.rows(audit) if r["kind"] == "blocked"]
    assert any("likely secret (github-token" in str(r) for r in reasons)
    assert token not in json.dumps(tunnels.rows(audit))


def test_a_relayed_websocket_message_gate_cannot_screen_is_dropped(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    addon = _addon(audit, gate_dirs["data"], Crashing(requests_pass=True))
    dropped = _websocket(addon, WebSocketMessage(Opcode.TEXT, True, b'{"hello": 1}'))
    assert dropped == [True]


def test_model_traffic_never_reaches_the_relay_screen(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """A request routed to screening as its format costs the relay screen nothing: it is
    not asked (this one would refuse everything it is asked about)."""
    addon = _addon(audit, gate_dirs["data"], Crashing())
    flow = _post(b'{"model": "m", "messages": []}', host="api.anthropic.com")
    flow.request.scheme, flow.request.port, flow.request.path = "https", 443, "/v1/messages"
    with taddons.context(addon):
        _run(addon.request(flow))
    assert flow.response is None and "gate_route" in flow.metadata
