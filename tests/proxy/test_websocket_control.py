"""WebSocket control frames an agent sends (ping, pong, close) carry bytes to the provider
too: they are screened like messages, and one that holds a finding never leaves."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect
from wsproto import ConnectionState, ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Event,
    Ping,
    Pong,
    Request,
    TextMessage,
)

from conftest import fake_secret
from gate.config import Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening
from screen.secrets_corpus import Gen


class ControlRecorder:
    """A Responses-over-WebSocket upstream that records every event the client side sent,
    control frames included (a ping's and a pong's payload, a close's reason)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.events: list[Event] = []
        self.conns: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def stop(self) -> None:
        self.sock.close()
        for c in self.conns:
            c.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        ws = WSConnection(ConnectionType.SERVER)
        while True:
            try:
                data = conn.recv(65536)
            except OSError:
                return
            ws.receive_data(data or None)
            for event in ws.events():
                self.events.append(event)
                reply: Event | None = None
                if isinstance(event, Request):
                    reply = AcceptConnection()
                elif isinstance(event, Ping):
                    reply = event.response()
                elif isinstance(event, TextMessage):
                    done = {"type": "response.completed", "response": {"id": "resp_1"}}
                    reply = TextMessage(json.dumps(done))
                elif (
                    isinstance(event, CloseConnection)
                    and ws.state is ConnectionState.REMOTE_CLOSING
                ):
                    reply = event.response()
                if reply is not None:
                    try:
                        conn.sendall(ws.send(reply))
                    except OSError:
                        return
            if not data:
                return

    def seen(self) -> str:
        return repr(self.events)

    def closes(self, timeout: float = 10.0) -> list[CloseConnection]:
        """The close frames it received, once one came (gate closes both sides at once, so
        the client may hear of it first)."""
        deadline = time.monotonic() + timeout
        while True:
            # wsproto reports the socket's end as a close with 1006: no frame came for it.
            found = [e for e in self.events if isinstance(e, CloseConnection) and e.code != 1006]
            if found or time.monotonic() > deadline:
                return found
            time.sleep(0.01)


@pytest.fixture
def upstream() -> Iterator[ControlRecorder]:
    rec = ControlRecorder()
    yield rec
    rec.stop()


@pytest.fixture
def ws_gate(upstream: ControlRecorder, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    config = replace(Config(), port=0, projects=(str(gate_dirs["project"]),)).with_upstreams(
        {"openai": parse_upstream("openai", upstream.url)}
    )
    server = BackgroundGate(config, gate_dirs["data"])
    yield server.start()
    server.stop()


@pytest.fixture
def denied(gate_dirs: dict[str, Path]) -> str:
    value = fake_secret("sk_live_")
    (gate_dirs["project"] / ".env").write_text(f"STRIPE_KEY={value}\n")
    return value


def _token() -> str:
    return Gen(int.from_bytes(fake_secret().encode()[:4], "big")).crc_token("ghp_")


def _open(gate: Listening) -> ClientConnection:
    url = f"{gate.base_url.replace('http', 'ws')}/openai/v1/responses"
    return connect(url, additional_headers={"authorization": "Bearer sk-fake"})


def _hello(ws: ClientConnection) -> None:
    ws.send(json.dumps({"type": "response.create", "model": "m", "input": "hello"}))
    assert json.loads(ws.recv(timeout=10))["type"] == "response.completed"


def _closed_by_gate(ws: ClientConnection) -> str:
    """The reason gate gave when it closed the connection."""
    with pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=10)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1008
    return closed.value.rcvd.reason


@pytest.mark.parametrize("kind", ["ping", "pong"])
@pytest.mark.parametrize("value", ["secret", "denied"])
def test_a_ping_or_pong_payload_holding_a_finding_never_leaves(
    ws_gate: Listening, upstream: ControlRecorder, denied: str, kind: str, value: str
) -> None:
    payload = _token() if value == "secret" else denied
    with _open(ws_gate) as ws:
        _hello(ws)
        if kind == "ping":
            ws.ping(payload.encode())
        else:
            ws.pong(payload.encode())
        reason = _closed_by_gate(ws)
    assert "gate withheld" in reason and payload not in reason
    assert payload not in upstream.seen()


def test_an_ordinary_ping_is_relayed_and_answered(
    ws_gate: Listening, upstream: ControlRecorder, denied: str
) -> None:
    with _open(ws_gate) as ws:
        _hello(ws)
        assert ws.ping(b"keepalive-1").wait(10)
    assert any(isinstance(e, Ping) and e.payload == b"keepalive-1" for e in upstream.events)


@pytest.mark.parametrize("value", ["secret", "denied"])
def test_a_close_reason_holding_a_finding_never_leaves(
    ws_gate: Listening, upstream: ControlRecorder, denied: str, value: str
) -> None:
    payload = _token() if value == "secret" else denied
    with _open(ws_gate) as ws:
        _hello(ws)
        ws.close(code=1000, reason=payload)
    closes = upstream.closes()
    assert payload not in upstream.seen()
    assert [c.code for c in closes] == [1000] and "gate withheld" in closes[0].reason
    assert not any(isinstance(e, Pong) for e in upstream.events)
