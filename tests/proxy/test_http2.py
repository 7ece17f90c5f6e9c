"""HTTP/2 between the agent and gate (forward mode, TLS with ALPN h2): screened, refused and
failed requests and streams answer as they do over HTTP/1, in the provider's JSON."""

from __future__ import annotations

import json
import os
import socket
import ssl
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anthropic
import h2.config
import h2.connection
import h2.events
import httpx2 as httpx
import pytest

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.config import AskConfig, Config, EgressDefault, EgressSettings, parse_upstream
from gate.proxy import ca
from gate.proxy.server import BackgroundGate, Listening

URL = "https://api.anthropic.com/v1/messages"


def _forward(upstream: str, gate_dirs: dict[str, Path]) -> BackgroundGate:
    config = replace(
        Config(),
        port=0,
        forward=True,
        ask=AskConfig(mode="never"),
        projects=(str(gate_dirs["project"]),),
        egress=EgressSettings(EgressDefault.BLOCK),
    )
    return BackgroundGate(
        config.with_upstreams({n: parse_upstream(n, upstream) for n in ("anthropic", "openai")}),
        gate_dirs["data"],
    )


@pytest.fixture
def fwd(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    server = _forward(provider.url, gate_dirs)
    yield server.start()
    server.stop()


def h2_client(gate: Listening, data: Path) -> httpx.Client:
    """An HTTP/2 client as an agent would be set up: gate as its proxy, gate's CA trusted."""
    trust = ssl.create_default_context(cafile=str(ca.paths(data).cert))
    return httpx.Client(proxy=gate.base_url, verify=trust, http2=True, http1=False, timeout=20)


def _message(text: str, **extra: object) -> dict[str, object]:
    return {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": text}], **extra}


def test_a_request_over_http2_is_screened(
    fwd: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    secret = fake_secret("tok_")
    (gate_dirs["project"] / ".env").write_text(f"TOKEN={secret}\n")
    with h2_client(fwd, gate_dirs["data"]) as c:
        resp = c.post(URL, json=_message(f"token {secret}"), headers={"x-api-key": "k"})
        with anthropic.Anthropic(
            api_key="sk-ant-fake-" + os.urandom(4).hex(), max_retries=0, http_client=c
        ) as sdk:
            reply = sdk.messages.create(**_message(f"again {secret}"))  # type: ignore[arg-type]
    assert resp.http_version == "HTTP/2" and resp.status_code == 200, resp.text
    assert reply.content
    bodies = [s.body.decode() for s in provider.seen]
    assert len(bodies) == 2 and all(secret not in b for b in bodies)
    assert all("withheld a value from .env" in b for b in bodies)


def test_a_block_over_http2_is_the_provider_s_json_error(
    fwd: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    with h2_client(fwd, gate_dirs["data"]) as c:
        for resp in (
            c.post(
                URL,
                content=b'{"model": "m", "model": "n"}',
                headers={"x-api-key": "k", "content-type": "application/json"},
            ),
            c.post(
                URL,
                json=_message("hi"),
                headers={"x-api-key": "k", "x-note": fake_secret("sk_live_")},
            ),
        ):
            assert resp.http_version == "HTTP/2" and resp.status_code == 400
            assert resp.headers["content-type"] == "application/json"
            body = resp.json()
            assert body["type"] == "error" and "gate blocked" in body["error"]["message"]
        with (
            anthropic.Anthropic(api_key="sk-ant-fake", max_retries=0, http_client=c) as sdk,
            pytest.raises(anthropic.BadRequestError, match="gate blocked"),
        ):
            sdk.messages.create(
                **_message("hi"),
                extra_headers={  # type: ignore[arg-type]
                    "x-note": fake_secret("sk_live_")
                },
            )
    assert provider.seen == []


def test_an_unreachable_upstream_over_http2_is_a_json_error(gate_dirs: dict[str, Path]) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"  # bound, never listening
        server = _forward(dead, gate_dirs)
        listening = server.start()
        try:
            with h2_client(listening, gate_dirs["data"]) as c:
                resp = c.post(URL, json=_message("hi"), headers={"x-api-key": "k"})
                with (
                    anthropic.Anthropic(api_key="sk-ant-fake", max_retries=0, http_client=c) as sdk,
                    pytest.raises(anthropic.APIStatusError) as err,
                ):
                    sdk.messages.create(**_message("hi"))  # type: ignore[arg-type]
        finally:
            server.stop()
    assert resp.http_version == "HTTP/2" and resp.status_code == 502
    assert resp.headers["content-type"] == "application/json"
    assert resp.headers.get("x-gate-error") == "upstream"
    body = resp.json()
    assert body["type"] == "error" and "could not get an answer" in body["error"]["message"]
    assert err.value.status_code == 502 and "could not get an answer" in str(err.value)


def test_a_stream_over_http2_arrives_event_by_event(
    fwd: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    secret = fake_secret("tok_")
    (gate_dirs["project"] / ".env").write_text(f"TOKEN={secret}\n")
    with h2_client(fwd, gate_dirs["data"]) as c:
        with c.stream(
            "POST", URL, json=_message(f"t {secret}", stream=True), headers={"x-api-key": "k"}
        ) as resp:
            assert resp.http_version == "HTTP/2" and resp.status_code == 200
            events = [
                json.loads(line[5:]) for line in resp.iter_lines() if line.startswith("data:")
            ]
        sdk = anthropic.Anthropic(api_key="sk-ant-fake", max_retries=0, http_client=c)
        with sdk.messages.stream(**_message("hi")) as stream:  # type: ignore[arg-type]
            text = stream.get_final_text()
    assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_stop"
    assert text == provider.reply_text
    assert secret not in provider.seen[0].body.decode()


def _h2_post_with_trailers(
    gate: Listening, data: Path, body: bytes, trailers: list[tuple[str, str]] | None
) -> int:
    """POST `body` over HTTP/2 through gate, with no content-length (HTTP/2 needs none),
    then trailers if any (httpx cannot send them); the response's status."""
    with socket.create_connection(("127.0.0.1", gate.port), timeout=10) as raw:
        raw.sendall(
            b"CONNECT api.anthropic.com:443 HTTP/1.1\r\nhost: api.anthropic.com:443\r\n\r\n"
        )
        assert raw.recv(4096).startswith(b"HTTP/1.1 200")
        tls = ssl.create_default_context(cafile=str(ca.paths(data).cert))
        tls.set_alpn_protocols(["h2"])
        with tls.wrap_socket(raw, server_hostname="api.anthropic.com") as sock:
            conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
            conn.initiate_connection()
            head = [
                (":method", "POST"),
                (":path", "/v1/messages"),
                (":scheme", "https"),
                (":authority", "api.anthropic.com"),
                ("content-type", "application/json"),
                ("x-api-key", "k"),
            ]
            conn.send_headers(1, head)
            conn.send_data(1, body, end_stream=trailers is None)
            if trailers is not None:
                conn.send_headers(1, trailers, end_stream=True)
            sock.sendall(conn.data_to_send())
            while True:
                chunk = sock.recv(65536)
                assert chunk, "gate closed the connection without answering"
                for event in conn.receive_data(chunk):
                    if isinstance(event, h2.events.ResponseReceived):
                        return int(dict(event.headers)[b":status"])
                sock.sendall(conn.data_to_send())


def test_a_request_with_trailers_is_refused(
    fwd: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """HTTP/2 trailers are headers sent after the body; gate screens headers before the body
    leaves and cannot withhold what comes after it, so a request with trailers never leaves
    (over HTTP/2 to the provider they would follow the body unread)."""
    token = "ghp_" + fake_secret()[:36]
    body = json.dumps(_message("hello")).encode()
    status = _h2_post_with_trailers(fwd, gate_dirs["data"], body, [("x-note", token)])
    assert status == 400
    assert provider.seen == []


def test_a_body_without_a_length_over_http2_reaches_an_http1_upstream_framed(
    fwd: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """HTTP/2 frames a body by its stream, so a client may send no content-length; an
    HTTP/1 upstream (a local model server, the fake here) needs one, or it waits for a
    body that never ends."""
    body = json.dumps(_message("hello")).encode()
    assert _h2_post_with_trailers(fwd, gate_dirs["data"], body, None) == 200
    assert [s.body for s in provider.seen] == [body]
