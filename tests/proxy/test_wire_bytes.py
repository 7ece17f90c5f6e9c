"""What leaves is what was screened: bodies read strictly, and JSON with one meaning only.

Each case goes through a real listener and asserts on what the loopback upstream got,
read with standard decoders: either the denied file's value is withheld from it, or the
upstream got nothing and the client a provider-shaped error naming the problem.
"""

from __future__ import annotations

import gzip
import json
import socket
import zlib
from pathlib import Path

import anthropic
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
_zstd = zstandard.ZstdCompressor().compress


@pytest.fixture
def secret(gate_dirs: dict[str, Path]) -> str:
    value = fake_secret("sk_live_")
    (gate_dirs["project"] / ".env").write_text(f"STRIPE_KEY={value}\n")
    return value


def _leaky(gate_dirs: dict[str, Path], secret: str) -> bytes:
    """A conversation whose last tool result is a read of the denied .env."""
    project = str(gate_dirs["project"])
    return json.dumps(
        conversation(
            project,
            tool_turn("toolu_1", "Read", {"file_path": f"{project}/.env"}, f"STRIPE_KEY={secret}"),
        )
    ).encode()


def _post(gate: Listening, content: bytes, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{gate.base_url}{URL}",
        content=content,
        headers={"content-type": "application/json", "x-api-key": "k", **headers},
    )


def _refused(resp: httpx.Response, provider: FakeProvider, words: str) -> None:
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["type"] == "gate_error"
    assert words in resp.json()["error"]["message"]
    assert provider.seen == []


def _withheld(provider: FakeProvider, secret: str, gate_dirs: dict[str, Path]) -> None:
    """The upstream got identity JSON without the value, and the audit holds those bytes."""
    seen = provider.seen[-1]
    assert "content-encoding" not in seen.headers
    assert secret.encode() not in seen.body
    sent = json.loads(seen.body)  # a standard decoder reads exactly what was screened
    assert "not sent to the model provider" in json.dumps(sent["messages"][-1])
    store = AuditStore(gate_dirs["data"] / "audit.db")
    assert store.body_of(next(store.rows(1))["id"]) == seen.body


# -- Content-Encoding ----------------------------------------------------------------------


def _two_members(raw: bytes) -> bytes:
    half = len(raw) // 2  # the value sits in the second member: all members are read
    return gzip.compress(raw[:half]) + gzip.compress(raw[half:])


def _two_frames(raw: bytes) -> bytes:
    half = len(raw) // 2
    return _zstd(raw[:half]) + _zstd(raw[half:])


READ = [
    ("gzip", gzip.compress),
    ("GZip", gzip.compress),
    ("deflate", zlib.compress),
    ("br", brotli.compress),
    ("zstd", _zstd),
    ("gzip", _two_members),
    ("zstd", _two_frames),
    ("gzip, br", lambda b: brotli.compress(gzip.compress(b))),
    ("identity, zstd", _zstd),
    ("zstd,gzip", lambda b: gzip.compress(_zstd(b))),
]


@pytest.mark.parametrize(("coding", "encode"), READ)
def test_every_declared_coding_is_read_whole_and_what_leaves_is_what_was_screened(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    coding: str,
    encode: object,
) -> None:
    assert callable(encode)
    resp = _post(gate, encode(_leaky(gate_dirs, secret)), **{"content-encoding": coding})
    assert resp.status_code == 200, resp.text
    _withheld(provider, secret, gate_dirs)


REFUSED = [
    ("gzip", lambda b: gzip.compress(b) + b"\x00\x00", "bytes after the end"),
    ("gzip", lambda b: gzip.compress(b) + b"trailing", "bytes after the end"),
    ("gzip", lambda b: gzip.compress(b)[:-5], "ends before its last member"),
    ("zstd", lambda b: _zstd(b) + b"tail", "bytes after the end"),
    ("deflate", lambda b: zlib.compress(b) + b"\n", "bytes after the end"),
    ("deflate", lambda b: zlib.compress(b)[2:-4], "deflate"),  # raw deflate is not HTTP's
    ("br", lambda b: brotli.compress(b) + b"x", "br:"),
    ("br", lambda b: brotli.compress(b)[:-2], "br:"),
    ("x-gzip", gzip.compress, "unknown content-coding 'x-gzip'"),
    ("compress", lambda b: b, "unknown content-coding"),
    ("gzip,,br", gzip.compress, "empty name"),
    ("gzip", lambda b: b, "gzip"),  # declared but not applied
    ("br, gzip", lambda b: brotli.compress(gzip.compress(b)), "gzip"),  # the wrong order
    ("gzip", lambda b: gzip.compress(b"  \n"), "decodes to nothing"),
    ("identity", lambda b: b" \r\n ", "decodes to nothing"),
]


@pytest.mark.parametrize(("coding", "encode", "words"), REFUSED)
def test_a_body_gate_cannot_read_as_declared_is_refused(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    coding: str,
    encode: object,
    words: str,
) -> None:
    assert callable(encode)
    resp = _post(gate, encode(_leaky(gate_dirs, secret)), **{"content-encoding": coding})
    _refused(resp, provider, words)


def test_two_content_encoding_headers_are_read_in_order(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    body = brotli.compress(gzip.compress(_leaky(gate_dirs, secret)))
    resp = httpx.post(
        f"{gate.base_url}{URL}",
        content=body,
        headers=[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
            ("content-encoding", "br"),
        ],
    )
    assert resp.status_code == 200
    _withheld(provider, secret, gate_dirs)


def test_a_chunked_compressed_body_is_read_whole(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    packed = gzip.compress(_leaky(gate_dirs, secret))
    chunks = (packed[i : i + 97] for i in range(0, len(packed), 97))  # Transfer-Encoding: chunked
    resp = httpx.post(
        f"{gate.base_url}{URL}",
        content=chunks,
        headers={"content-encoding": "gzip", "content-type": "application/json"},
    )
    assert resp.status_code == 200
    _withheld(provider, secret, gate_dirs)


def _raw(gate: Listening, head: str, body: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", gate.port), timeout=5) as s:
        s.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        s.shutdown(socket.SHUT_WR)
        out = b""
        while chunk := s.recv(65536):
            out += chunk
    return out


@pytest.mark.parametrize(
    "framing",
    [
        "Transfer-Encoding: gzip, chunked\n",  # a coding in TE
        "Content-Length: 5\nTransfer-Encoding: chunked\n",  # request smuggling
        "Transfer-Encoding: chunked\nTransfer-Encoding: identity\n",
    ],
)
def test_odd_message_framing_never_carries_an_unscreened_body(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, framing: str
) -> None:
    body = _leaky(gate_dirs, secret)
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    head = (
        f"POST {URL} HTTP/1.1\nHost: 127.0.0.1:{gate.port}\nConnection: close\n"
        f"Content-Type: application/json\n{framing}"
    )
    reply = _raw(gate, head, chunked)
    assert reply == b"" or reply.startswith(b"HTTP/1.1 ")  # refused, closed, or screened
    assert all(secret.encode() not in s.body for s in provider.seen)


def test_a_body_on_a_get_is_screened_too(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    httpx.request("GET", f"{gate.base_url}{URL}", content=_leaky(gate_dirs, secret))
    assert provider.seen and all(secret.encode() not in s.body for s in provider.seen)


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "application/octet-stream", ""],
)
def test_a_json_body_is_screened_whatever_its_content_type(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    content_type: str,
) -> None:
    resp = _post(gate, _leaky(gate_dirs, secret), **{"content-type": content_type})
    assert resp.status_code == 200
    _withheld(provider, secret, gate_dirs)


@pytest.mark.parametrize(
    ("content_type", "encode", "words"),
    [
        ("application/json; charset=utf-16", lambda b: b.decode().encode("utf-16"), "charset"),
        ("application/json; charset=latin-1", lambda b: b, "charset 'latin-1'"),
        ("application/json", lambda b: b.decode().encode("utf-16"), "not UTF-8"),
        ("application/json", lambda b: b.decode().encode("utf-16-le"), "not JSON"),
        ("application/json", lambda b: b"\xef\xbb\xbf" + b, "BOM"),
        ("application/json", lambda b: b.decode().encode("utf-32"), "not UTF-8"),
    ],
)
def test_bodies_in_other_encodings_of_text_are_refused(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    content_type: str,
    encode: object,
    words: str,
) -> None:
    assert callable(encode)
    _refused(
        _post(gate, encode(_leaky(gate_dirs, secret)), **{"content-type": content_type}),
        provider,
        words,
    )


# -- JSON with one meaning -----------------------------------------------------------------


def _with_copy(raw: bytes, secret: str, where: str) -> bytes:
    """The body with a second copy of a key spliced in, the copy holding the value."""
    text = raw.decode()
    if where == "top":  # a second "messages" the provider may read instead
        extra = json.dumps([{"role": "user", "content": f"KEY={secret}"}])
        return (text[:-1] + f', "messages": {extra}}}').encode()
    if where == "escaped":  # the same key, spelled with a \u escape
        extra = json.dumps([{"role": "user", "content": f"KEY={secret}"}])
        return (text[:-1] + f', "messag\\u0065s": {extra}}}').encode()
    # deep: the tool result's content twice
    return text.replace(
        '"content": "STRIPE_KEY=', f'"content": "clean", "content": "KEY={secret} STRIPE_KEY='
    ).encode()


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ("top", "the key messages appears more than once"),
        ("escaped", "the key messages appears more than once"),
        ("deep", "the key messages[2].content[0].content appears more than once"),
    ],
)
def test_a_repeated_key_is_refused_and_named_by_its_path(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    where: str,
    named: str,
) -> None:
    _refused(_post(gate, _with_copy(_leaky(gate_dirs, secret), secret, where)), provider, named)


def test_a_repeated_key_in_a_next_turn_is_refused_too(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    first = json.loads(_leaky(gate_dirs, secret))
    assert _post(gate, json.dumps(first).encode()).status_code == 200
    first["messages"].append({"role": "assistant", "content": "ok"})
    nxt = json.dumps(first)
    nxt = nxt[:-3] + ', "content": "KEY=' + secret + '"}]}'  # the new message repeats a key
    resp = _post(gate, nxt.encode())
    assert resp.status_code == 400 and "appears more than once" in resp.text
    assert len(provider.seen) == 1


@pytest.mark.parametrize(
    ("splice", "words"),
    [
        (', "temperature": NaN', "NaN is not JSON"),
        (', "temperature": Infinity', "Infinity is not JSON"),
        (', "temperature": -Infinity', "Infinity is not JSON"),
        (', "top_k": 123456789012345678901234567890', "integer of 30 digits"),
        (', "top_p": 1e999', "overflows"),
    ],
)
def test_numbers_no_provider_reads_as_gate_does_are_refused(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    splice: str,
    words: str,
) -> None:
    text = _leaky(gate_dirs, secret).decode()
    _refused(_post(gate, (text[:-1] + splice + "}").encode()), provider, words)


@pytest.mark.parametrize("tail", [b" {}", b"\n[]", b'{"messages": []}', b"x", b"\x00"])
def test_anything_after_the_json_value_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str, tail: bytes
) -> None:
    _refused(_post(gate, _leaky(gate_dirs, secret) + tail), provider, "not JSON")


def test_very_deep_nesting_is_refused_not_crashed_on(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    text = _leaky(gate_dirs, secret).decode()
    _refused(
        _post(gate, (text[:-1] + ', "metadata": ' + "[" * 5000 + "]" * 5000 + "}").encode()),
        provider,
        "nests deeper",
    )


def test_escapes_are_read_as_the_provider_reads_them(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    project = str(gate_dirs["project"])
    # The tool result's type and the value itself spelled with \u escapes, and a pair of
    # surrogates (an emoji) beside them.
    escaped = "".join(f"\\u{ord(c):04x}" for c in secret)
    text = json.dumps(
        conversation(project, tool_turn("toolu_1", "Bash", {"command": "env"}, "VALUE"))
    )
    text = text.replace('"VALUE"', f'"x \\ud83d\\ude00 {escaped}"').replace(
        '"tool_result"', '"tool\\u005fresult"'
    )
    resp = _post(gate, text.encode())
    assert resp.status_code == 200
    seen = provider.seen[-1].body
    assert secret not in json.loads(seen)["messages"][-1]["content"][0]["content"]
    assert secret.encode() not in seen


def test_a_lone_surrogate_is_refused_with_what_to_do(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    # A value split by a lone surrogate: gate's matchers cannot read across it, and
    # providers keep, replace or refuse it.
    text = _leaky(gate_dirs, secret).decode().replace(secret, secret[:9] + "\\udc00" + secret[9:])
    _refused(_post(gate, text.encode()), provider, "lone UTF-16 surrogate")


def test_keys_in_another_case_are_still_screened_as_strings(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    body = json.loads(_leaky(gate_dirs, secret))
    body["Messages"] = [{"role": "user", "content": f"STRIPE_KEY={secret}"}]
    body["messages"] = body["messages"][:1]
    assert _post(gate, json.dumps(body).encode()).status_code == 200
    assert secret.encode() not in provider.seen[-1].body


def test_what_the_sdk_sends_passes_the_strict_reading(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    client.messages.create(**json.loads(_leaky(gate_dirs, secret)))
    _withheld(provider, secret, gate_dirs)
