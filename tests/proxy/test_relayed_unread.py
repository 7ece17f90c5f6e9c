"""What forward mode relays unread (a decrypted host's other endpoints, plain HTTP to an
allowed host) is still screened as opaque text: a denied value or a secret in it blocks."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest
from proxy.test_forward_refusals import _gate, _over_tls, _post

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.config import EgressDefault, EgressSettings


@pytest.fixture
def env_secret(gate_dirs: dict[str, Path]) -> str:
    secret = fake_secret("sk_live_")
    (gate_dirs["project"] / ".env").write_text(f"# app\nSTRIPE_KEY={secret}\nDEBUG=true\n")
    return secret


def test_a_denied_value_in_a_model_host_s_other_endpoint_is_blocked(
    provider: FakeProvider, gate_dirs: dict[str, Path], env_secret: str
) -> None:
    server = _gate(provider, gate_dirs)
    gate = server.start()
    try:
        body = ("STRIPE_KEY=" + env_secret).encode()
        reply = _over_tls(
            gate,
            gate_dirs["data"],
            "chatgpt.com",
            _post("/backend-api/ps/mcp", "chatgpt.com", body),
        )
    finally:
        server.stop()
    assert all(env_secret.encode() not in s.body for s in provider.seen)
    assert reply.startswith(b"HTTP/1.1 403"), reply[:300]


def test_a_denied_value_in_plain_http_to_an_allowed_host_is_blocked(
    provider: FakeProvider, gate_dirs: dict[str, Path], env_secret: str
) -> None:
    server = _gate(provider, gate_dirs, EgressSettings(EgressDefault.BLOCK, ("127.0.0.1",)))
    gate = server.start()
    try:
        with httpx.Client(proxy=gate.base_url) as client:
            reply = client.post(f"{provider.url}/upload", content=env_secret.encode())
    finally:
        server.stop()
    assert all(env_secret.encode() not in s.body for s in provider.seen)
    assert reply.status_code == 403
