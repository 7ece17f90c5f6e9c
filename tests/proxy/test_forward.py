"""Forward mode through a real listener: SDKs with HTTPS_PROXY and gate's CA, loopback only.

The SDKs name the real provider hosts (api.anthropic.com, api.openai.com); the proxy gets
that name in the CONNECT and never resolves it: `--upstream` delivers to the fake.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import re
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anthropic
import httpx2 as httpx
import openai
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from mitmproxy import certs
from proxy.test_websocket import FakeWsProvider

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.audit import tunnels
from gate.audit.store import AuditStore
from gate.config import AskConfig, Config, EgressDefault, EgressSettings, parse_upstream
from gate.proxy import ca
from gate.proxy.server import BackgroundGate, Listening
from loopback import read_until
from screen.secrets_corpus import Gen


def token() -> str:
    """A GitHub token that passes its checksum, made at run time."""
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


def forward_config(
    provider: FakeProvider, egress: EgressSettings | None = None, *, project: Path
) -> Config:
    # The project is known (as `gate serve --project`): requests that state no working
    # directory are screened for its denied files instead of being refused.
    return replace(
        Config(),
        port=0,
        forward=True,
        ask=AskConfig(mode="never"),
        projects=(str(project),),
        egress=egress or EgressSettings(EgressDefault.BLOCK),
    ).with_upstreams(
        {n: parse_upstream(n, provider.url) for n in ("anthropic", "openai", "chatgpt")}
    )


@pytest.fixture
def fwd(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    config = forward_config(provider, project=gate_dirs["project"])
    server = BackgroundGate(config, gate_dirs["data"])
    yield server.start()
    server.stop()


def proxied(gate: Listening, data: Path) -> httpx.Client:
    """An HTTP client as an agent is set up: the gate as proxy, the gate's CA trusted."""
    trust = ssl.create_default_context(cafile=str(ca.paths(data).cert))
    return httpx.Client(proxy=gate.base_url, verify=trust, timeout=20)


def test_anthropic_sdk_over_connect_is_screened(
    fwd: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    secret = token()
    with anthropic.Anthropic(
        api_key="sk-ant-fake-" + os.urandom(4).hex(),
        max_retries=0,
        http_client=proxied(fwd, gate_dirs["data"]),
    ) as client:
        reply = client.messages.create(
            model="claude-test",
            max_tokens=50,
            messages=[{"role": "user", "content": f"my token is {secret}"}],
        )
    assert reply.content
    bodies = [s.body for s in provider.seen if s.body]
    assert bodies and all(secret.encode() not in b for b in bodies)
    assert provider.seen[-1].path == "/v1/messages"
    row = next(AuditStore(gate_dirs["data"] / "audit.db").rows(1))
    assert (row["upstream"], row["verdict"]) == ("anthropic", "modified")


def test_ca_key_is_owner_only(fwd: Listening, gate_dirs: dict[str, Path]) -> None:
    authority = ca.paths(gate_dirs["data"])
    assert authority.key.stat().st_mode & 0o777 == 0o600
    assert authority.key.parent.stat().st_mode & 0o777 == 0o700
    bundle = authority.bundle.read_bytes()
    assert authority.cert.read_bytes() in bundle
    assert bundle.count(b"BEGIN CERTIFICATE") > 1  # the system's roots come first


def test_blocked_host_is_refused_with_a_reason(fwd: Listening, gate_dirs: dict[str, Path]) -> None:
    # Never resolved: the policy refuses the CONNECT before any connection is tried.
    with proxied(fwd, gate_dirs["data"]) as client, pytest.raises(httpx.ProxyError) as err:
        client.get("https://telemetry.example.invalid/v1/events")
    assert "403" in str(err.value)
    with httpx.Client(proxy=fwd.base_url) as plain:
        raw = plain.get("http://telemetry.example.invalid/x")
    assert raw.status_code == 403 and "egress.allow" in raw.text
    rows = tunnels.rows(AuditStore(gate_dirs["data"] / "audit.db"))
    assert [(r["host"], r["kind"]) for r in rows] == [("telemetry.example.invalid", "blocked")] * 2


def test_gate_itself_still_answers_on_the_forward_port(fwd: Listening) -> None:
    health = httpx.get(f"{fwd.base_url}/_gate/health").json()
    assert health["ok"] is True and health["forward"] is True


# The SDK itself calls websockets' connect() the way websockets 17 deprecates.
@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager")
def test_openai_sdk_websocket_over_connect_is_screened(
    provider: FakeProvider, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK reads HTTPS_PROXY and SSL_CERT_FILE as an agent's runtime does."""
    ws = FakeWsProvider(str(gate_dirs["project"]))
    config = forward_config(provider, project=gate_dirs["project"]).with_upstreams(
        {"openai": parse_upstream("openai", ws.url)}
    )
    server = BackgroundGate(config, gate_dirs["data"])
    gate = server.start()
    secret = token()
    monkeypatch.setenv("HTTPS_PROXY", gate.base_url)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca.paths(gate_dirs["data"]).bundle))
    try:
        client = closed_after_test(
            openai.OpenAI(api_key="sk-fake-" + os.urandom(4).hex(), max_retries=0)
        )
        with client.responses.connect() as conn:
            conn.response.create(
                model="gpt-test",
                input=[
                    {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": f"deploy with {secret}"}],
                    }
                ],
            )
            kinds = [event.type for event in _until_done(conn)]
        assert "response.completed" in kinds
    finally:
        server.stop()
        ws.server.shutdown()
    assert ws.frames and all(secret not in f for f in ws.frames)
    row = next(AuditStore(gate_dirs["data"] / "audit.db").rows(1))
    assert (row["method"], row["upstream"], row["verdict"]) == ("WS", "openai", "modified")


def _until_done(conn: object) -> Iterator[object]:
    for event in conn:  # type: ignore[attr-defined]
        yield event
        if event.type in ("response.completed", "error"):
            return


class TlsEcho:
    """A loopback TLS server with a certificate of its own CA: the 'other host'."""

    def __init__(self, tmp: Path):
        store = certs.CertStore.from_store(tmp / "other", "other", 2048)
        self.ca_file = tmp / "other" / "other-ca-cert.pem"
        leaf = store.get_cert("127.0.0.1", [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
        (tmp / "leaf.pem").write_bytes(
            leaf.cert.to_pem()
            + leaf.privatekey.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption(),
            )
        )
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(tmp / "leaf.pem")
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, args=(ctx,), daemon=True).start()

    def _serve(self, ctx: ssl.SSLContext) -> None:
        with contextlib.suppress(OSError):
            while True:
                conn, _ = self.sock.accept()
                with contextlib.suppress(OSError), ctx.wrap_socket(conn, server_side=True) as t:
                    t.sendall(b"echo:" + t.recv(100))


def _connect_through(gate: Listening, host: str, port: int) -> tuple[socket.socket, bytes]:
    sock = socket.create_connection((gate.host, gate.port), timeout=10)
    sock.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
    head = read_until(sock, b"\r\n\r\n")
    length = re.search(rb"content-length: (\d+)", head, re.I)
    want = head.index(b"\r\n\r\n") + 4 + (int(length[1]) if length else 0)
    while len(head) < want and (chunk := sock.recv(4096)):
        head += chunk
    return sock, head


@pytest.mark.parametrize(
    "egress",
    [EgressSettings(), EgressSettings(EgressDefault.BLOCK, ("127.0.0.1",))],
    ids=["tunnel-and-log", "block-but-allowed"],
)
def test_other_host_is_tunnelled_unread_and_audited(
    egress: EgressSettings, provider: FakeProvider, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    other = TlsEcho(tmp_path)
    config = forward_config(provider, egress, project=gate_dirs["project"])
    server = BackgroundGate(config, gate_dirs["data"])
    gate = server.start()
    try:
        sock, head = _connect_through(gate, "127.0.0.1", other.port)
        assert head.startswith(b"HTTP/1.1 200"), head
        # Trusting only the other host's CA: this works only if gate did not decrypt.
        trust = ssl.create_default_context(cafile=str(other.ca_file))
        with trust.wrap_socket(sock, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"ping")
            assert tls.recv(100) == b"echo:ping"
        deadline = time.monotonic() + 10
        while True:
            rows = tunnels.rows(AuditStore(gate_dirs["data"] / "audit.db"))
            if (rows and rows[0]["ended"]) or time.monotonic() > deadline:
                break
            time.sleep(0.05)
    finally:
        server.stop()
    [row] = rows
    assert (row["host"], row["port"], row["kind"]) == ("127.0.0.1", other.port, "tunnel")
    assert row["bytes_out"] > 4 and row["bytes_in"] > 9 and row["ended"] >= row["ts"]


def test_an_allow_list_lets_only_its_hosts_through(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    egress = EgressSettings(EgressDefault.BLOCK, ("*.allowed.test",))
    config = forward_config(provider, egress, project=gate_dirs["project"])
    server = BackgroundGate(config, gate_dirs["data"])
    gate = server.start()
    try:
        # Look-alikes of the allowed domain are refused before any connection is tried.
        for host in ("allowed.test.evil.invalid", "evilallowed.test", "allowed.test"):
            sock, head = _connect_through(gate, host, 443)
            sock.close()
            assert head.startswith(b"HTTP/1.1 403") and b"egress.allow" in head, head
    finally:
        server.stop()
    kinds = {r["host"]: r["kind"] for r in tunnels.rows(AuditStore(gate_dirs["data"] / "audit.db"))}
    assert set(kinds.values()) == {"blocked"} and len(kinds) == 3


def test_codex_chatgpt_endpoint_over_http_and_its_account_calls(
    fwd: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """Codex signed in with ChatGPT: its Responses calls on chatgpt.com/backend-api/codex
    are screened; its account calls on the same host go, unread and audited, to where the
    user sent the `chatgpt` upstream (here the fake), never to chatgpt.com."""
    secret = token()
    headers = {"chatgpt-account-id": "acct-fake"}
    with openai.OpenAI(
        api_key="fake-access-token",
        max_retries=0,
        default_headers=headers,
        base_url="https://chatgpt.com/backend-api/codex",
        http_client=proxied(fwd, gate_dirs["data"]),
    ) as client:
        client.responses.create(model="gpt-test", input=f"use {secret}")
        account = client.get("/../wham/accounts/check", cast_to=object)
    assert account is not None
    paths = [s.path for s in provider.seen]
    assert paths == ["/responses", "/backend-api/wham/accounts/check"], paths
    assert secret.encode() not in provider.seen[0].body
    assert provider.seen[0].headers["chatgpt-account-id"] == "acct-fake"
    rows = tunnels.rows(AuditStore(gate_dirs["data"] / "audit.db"))
    assert [(r["host"], r["kind"], r["reason"]) for r in rows] == [
        ("chatgpt.com", "http", "to upstream chatgpt")
    ]


def test_the_host_header_cannot_steer_a_decrypted_request(
    fwd: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """Inside a CONNECT to api.anthropic.com, a Host header naming another host changes
    nothing: the request is screened and goes to the anthropic upstream."""
    secret = token()
    sock, head = _connect_through(fwd, "api.anthropic.com", 443)
    assert head.startswith(b"HTTP/1.1 200"), head
    trust = ssl.create_default_context(cafile=str(ca.paths(gate_dirs["data"]).cert))
    body = (
        b'{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"'
        + secret.encode()
        + b'"}]}'
    )
    with trust.wrap_socket(sock, server_hostname="api.anthropic.com") as tls:
        tls.sendall(
            b"POST /v1/messages HTTP/1.1\r\nHost: exfil.example.invalid\r\n"
            b"content-type: application/json\r\nx-api-key: k\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"connection: close\r\n\r\n" + body
        )
        reply = b""
        while chunk := tls.recv(65536):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 200"), reply[:200]
    [seen] = provider.seen
    assert seen.path == "/v1/messages" and secret.encode() not in seen.body
    assert tunnels.rows(AuditStore(gate_dirs["data"] / "audit.db")) == []
