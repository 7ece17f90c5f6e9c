"""Forward mode through a real listener: SDKs with HTTPS_PROXY and gate's CA, loopback only.

The SDKs name the real provider hosts (api.anthropic.com, api.openai.com); the proxy gets
that name in the CONNECT and never resolves it: `--upstream` delivers to the fake.
"""

from __future__ import annotations

import os
import random
import ssl
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anthropic
import httpx2 as httpx
import pytest

from fake_provider import FakeProvider
from gate.audit import tunnels
from gate.audit.store import AuditStore
from gate.config import AskConfig, Config, EgressDefault, EgressSettings, parse_upstream
from gate.proxy import ca
from gate.proxy.server import BackgroundGate, Listening
from screen.secrets_corpus import Gen


def token() -> str:
    """A GitHub token that passes its checksum, made at run time."""
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


def forward_config(provider: FakeProvider, egress: EgressSettings | None = None) -> Config:
    return replace(Config(), port=0, forward=True, ask=AskConfig(mode="never"),
                   egress=egress or EgressSettings(EgressDefault.BLOCK)).with_upstreams(
        {n: parse_upstream(n, provider.url) for n in ("anthropic", "openai", "chatgpt")})


@pytest.fixture
def fwd(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    server = BackgroundGate(forward_config(provider), gate_dirs["data"])
    yield server.start()
    server.stop()


def proxied(gate: Listening, data: Path) -> httpx.Client:
    """An HTTP client as an agent is set up: the gate as proxy, the gate's CA trusted."""
    trust = ssl.create_default_context(cafile=str(ca.paths(data).cert))
    return httpx.Client(proxy=gate.base_url, verify=trust, timeout=20)


def test_anthropic_sdk_over_connect_is_screened(fwd: Listening, provider: FakeProvider,
                                                gate_dirs: dict[str, Path]) -> None:
    secret = token()
    with anthropic.Anthropic(api_key="sk-ant-fake-" + os.urandom(4).hex(), max_retries=0,
                             http_client=proxied(fwd, gate_dirs["data"])) as client:
        reply = client.messages.create(model="claude-test", max_tokens=50, messages=[
            {"role": "user", "content": f"my token is {secret}"}])
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


def test_blocked_host_is_refused_with_a_reason(fwd: Listening,
                                               gate_dirs: dict[str, Path]) -> None:
    # Never resolved: the policy refuses the CONNECT before any connection is tried.
    with proxied(fwd, gate_dirs["data"]) as client, pytest.raises(httpx.ProxyError) as err:
        client.get("https://telemetry.example.invalid/v1/events")
    assert "403" in str(err.value)
    with httpx.Client(proxy=fwd.base_url) as plain:
        raw = plain.get("http://telemetry.example.invalid/x")
    assert raw.status_code == 403 and "egress.allow" in raw.text
    rows = tunnels.rows(AuditStore(gate_dirs["data"] / "audit.db"))
    assert [(r["host"], r["kind"]) for r in rows] == [
        ("telemetry.example.invalid", "blocked")] * 2


def test_gate_itself_still_answers_on_the_forward_port(fwd: Listening) -> None:
    health = httpx.get(f"{fwd.base_url}/_gate/health").json()
    assert health["ok"] is True and health["forward"] is True
