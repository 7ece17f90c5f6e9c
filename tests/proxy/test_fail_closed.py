"""Fail closed: whatever goes wrong while screening, nothing is forwarded."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import brotli
import httpx2 as httpx
import pytest
import zstandard

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from gate.proxy.server import Listening
from messages import conversation, tool_turn

URL = "/anthropic/v1/messages"


def _post(gate: Listening, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{gate.base_url}{URL}",
        content=content,
        headers={"content-type": "application/json", "x-api-key": "k", **headers},
    )


def _blocked(resp: httpx.Response, provider: FakeProvider, status: int, words: str) -> None:
    assert resp.status_code == status
    err = resp.json()
    assert err["type"] == "error" and err["error"]["type"] == "gate_error"
    assert words in err["error"]["message"]
    assert provider.seen == []  # nothing left the machine


@pytest.mark.parametrize("body", [b"{not json", b"\xff\xfe", b"[1, 2]"])
def test_unparseable_bodies_are_blocked(
    gate: Listening, provider: FakeProvider, body: bytes
) -> None:
    resp = _post(gate, body)
    _blocked(resp, provider, 400, "cannot screen this request")


def test_an_unknown_content_encoding_is_blocked(gate: Listening, provider: FakeProvider) -> None:
    resp = _post(gate, b"\x00\x01garbage", **{"content-encoding": "x-custom"})
    _blocked(resp, provider, 400, "unknown content-coding 'x-custom'")


def test_a_corrupt_gzip_body_is_blocked(gate: Listening, provider: FakeProvider) -> None:
    resp = _post(gate, b"\x1f\x8b not really gzip", **{"content-encoding": "gzip"})
    _blocked(resp, provider, 400, "cannot read this request body: gzip")


CODECS = {
    "gzip": (gzip.compress, gzip.decompress),
    "deflate": (zlib.compress, zlib.decompress),
    "br": (brotli.compress, brotli.decompress),
    "zstd": (
        lambda b: zstandard.ZstdCompressor().compress(b),
        lambda b: zstandard.ZstdDecompressor().decompress(b),
    ),
}


@pytest.mark.parametrize("name", sorted(CODECS))
def test_encoded_bodies_are_decoded_screened_and_sent_decoded(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], name: str
) -> None:
    encode, _ = CODECS[name]
    project = str(gate_dirs["project"])
    secret = fake_secret()
    body = conversation(
        project,
        tool_turn("toolu_9", "Read", {"file_path": f"{project}/.env"}, f"DB_PASSWORD={secret}"),
    )
    resp = _post(gate, encode(json.dumps(body).encode()), **{"content-encoding": name})
    assert resp.status_code == 200
    seen = provider.seen[-1]
    assert "content-encoding" not in seen.headers  # what leaves is what was screened
    sent = json.loads(seen.body)
    assert "withheld" in sent["messages"][2]["content"][0]["content"]
    assert secret.encode() not in seen.body
    store = AuditStore(gate_dirs["data"] / "audit.db")
    row = next(store.rows(1))
    assert store.body_of(row["id"]) == seen.body and row["content_encoding"] == name


@pytest.mark.parametrize(
    ("turns", "words"),
    [
        # A result answering no call, and two calls sharing an id: neither could be paired.
        (
            [
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_x", "content": "KEY=1"}
                    ],
                }
            ],
            "answers no tool call",
        ),
        (
            tool_turn("toolu_1", "Read", {"file_path": "/p/a"}, "a")
            + tool_turn("toolu_1", "Read", {"file_path": "/p/.env"}, "KEY=1"),
            "two tool ",
        ),
    ],
)
def test_unpairable_tool_results_are_blocked(
    gate: Listening, provider: FakeProvider, turns: list[dict[str, object]], words: str
) -> None:
    body = conversation("/p")
    body["messages"] += turns
    _blocked(_post(gate, json.dumps(body).encode()), provider, 400, words)


def test_websocket_upgrades_are_refused(gate: Listening, provider: FakeProvider) -> None:
    resp = httpx.get(
        f"{gate.base_url}/anthropic/v1/messages",
        headers={
            "upgrade": "websocket",
            "connection": "Upgrade",
            "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
            "sec-websocket-version": "13",
        },
    )
    _blocked(resp, provider, 400, "WebSocket traffic only for the Responses API")


@pytest.mark.parametrize(
    "path",
    [
        "/v1//messages",
        "/V1/Messages",
        "/v1/messages;x=1",
        "/v1/messages/",
        "/v1/messages%3Fbeta=true",
    ],
)
def test_odd_spellings_of_the_messages_path_are_still_screened(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], path: str
) -> None:
    project = str(gate_dirs["project"])
    secret = fake_secret()
    body = conversation(
        project, tool_turn("toolu_1", "Read", {"file_path": f"{project}/.env"}, f"KEY={secret}")
    )
    httpx.post(f"{gate.base_url}/anthropic{path}", json=body, headers={"x-api-key": "k"})
    assert provider.seen and secret not in provider.seen[-1].body.decode()


def test_a_sigv4_signed_body_that_needs_editing_is_blocked_with_advice(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = str(gate_dirs["project"])
    body = conversation(
        project,
        tool_turn("toolu_1", "Read", {"file_path": f"{project}/.env"}, "KEY=" + fake_secret()),
    )
    del body["model"]
    body["anthropic_version"] = "bedrock-2023-05-31"
    sig = "AWS4-HMAC-SHA256 Credential=AKIDFAKE/20261130/us-east-1/bedrock/aws4_request"
    resp = httpx.post(
        f"{gate.base_url}/anthropic/model/anthropic.claude-x/invoke",
        json=body,
        headers={"authorization": sig},
    )
    _blocked(resp, provider, 400, "AWS_BEARER_TOKEN_BEDROCK")
    # A signed body with nothing to withhold passes untouched, signature intact.
    clean = conversation(project)
    del clean["model"]
    resp = httpx.post(
        f"{gate.base_url}/anthropic/model/anthropic.claude-x/invoke",
        json=clean,
        headers={"authorization": sig},
    )
    assert resp.status_code == 200 and provider.seen[-1].headers["authorization"] == sig
    row = next(AuditStore(gate_dirs["data"] / "audit.db").rows(1))
    assert row["model"] == "anthropic.claude-x"


def test_an_upstream_that_opted_out_forwards_non_json_and_says_so(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    from dataclasses import replace as dc_replace

    from gate.config import Config, parse_upstream
    from gate.proxy.server import BackgroundGate

    up = dc_replace(parse_upstream("files", provider.url), unsafe_pass_non_json=True)
    known = (str(gate_dirs["project"]),)  # as `gate serve --project` would
    server = BackgroundGate(
        dc_replace(Config(), port=0, projects=known).with_upstreams({"files": up}),
        gate_dirs["data"],
    )
    listening = server.start()
    try:
        resp = httpx.post(f"{listening.base_url}/files/v1/upload", content=b"\x00raw bytes")
    finally:
        server.stop()
    assert resp.status_code == 200 and provider.seen[-1].body == b"\x00raw bytes"
    row = next(AuditStore(gate_dirs["data"] / "audit.db").rows(1))
    assert row["verdict"] == "unscreened"
