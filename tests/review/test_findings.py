"""REVIEW FINDINGS (security review of cafe3e2): each test here FAILS on the merged code
and passes once the finding is fixed. Every secret is fake and made at run time; every
listener is on loopback."""

from __future__ import annotations

from pathlib import Path

import httpx2 as httpx
import pytest

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.proxy.server import Listening

B = "gateb0undary"


@pytest.fixture
def secret(gate_dirs: dict[str, Path]) -> str:
    value = fake_secret("sk_live_")
    (gate_dirs["project"] / ".env").write_text(f"STRIPE_KEY={value}\n")
    return value


def _seen(provider: FakeProvider) -> bytes:
    return b"".join(
        s.body + str(dict(s.headers)).encode() + str(s.path).encode() for s in provider.seen
    )


# -- F1: a multipart part's Content-Type header leaves unscreened ------------------------


@pytest.mark.parametrize(
    "part_type",
    [
        "text/plain; note={secret}",  # an extra parameter gate never reads
        'text/plain; charset=utf-8; x="{secret}"',
        "{secret}/plain",  # the media type itself
    ],
)
def test_f1_a_part_content_type_cannot_carry_a_secret(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    part_type: str,
) -> None:
    head = 'Content-Disposition: form-data; name="file"; filename="a.txt"\r\n'
    body = (
        f"--{B}\r\n{head}Content-Type: {part_type.format(secret=secret)}\r\n\r\n"
        f"harmless\r\n--{B}--\r\n"
    ).encode()
    resp = httpx.post(
        f"{gate.base_url}/openai/v1/files",
        content=body,
        headers={"content-type": f"multipart/form-data; boundary={B}"},
    )
    # Refused (400) or withheld: either way the value must not reach the provider.
    assert secret.encode() not in _seen(provider), (resp.status_code, resp.text[:200])


# -- F3: credential headers the upstream never reads pass unscreened ---------------------


def _sent_anywhere(provider: FakeProvider, value: str) -> bool:
    return any(
        value in str(s.path) or value in str(dict(s.headers)) or value.encode() in (s.body or b"")
        for s in provider.seen
    )


@pytest.mark.parametrize("header", ["x-goog-api-key", "api-key", "x-amz-security-token"])
def test_f3_a_credential_header_of_another_provider_is_screened(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    header: str,
) -> None:
    """Anthropic reads x-api-key (or authorization); a denied value put in Google's, Azure's
    or AWS's credential header still reaches it, unscreened."""
    httpx.post(
        f"{gate.base_url}/anthropic/v1/messages",
        headers={"x-api-key": "k", header: secret},
        json={"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert not _sent_anywhere(provider, secret), [dict(s.headers) for s in provider.seen]


# -- F4: a value cut in two across path segments or query parameters ---------------------


def _github_token() -> str:
    import random

    from screen.secrets_corpus import Gen

    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


@pytest.mark.parametrize("shape", ["/v1/x/{a}/{b}", "/v1/x/y?p={a}&q={b}"])
def test_f4_a_secret_cut_across_path_segments_or_query_parameters_is_refused(
    gate: Listening,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secret: str,
    shape: str,
) -> None:
    """Headers are read together in their order (a value cut in two across headers); the
    path's segments and the query's parameters are not."""
    for value in (secret, _github_token()):
        half = len(value) // 2
        path = shape.format(a=value[:half], b=value[half:])
        httpx.post(
            f"{gate.base_url}/openai{path}",
            headers={"authorization": "Bearer k"},
            json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
        )
        joined = "".join(str(s.path) for s in provider.seen)
        assert not (value[:half] in joined and value[half:] in joined), path


# -- F5: on an upstream that passes non-JSON, one binary part unscreens every other part --


def test_f5_a_binary_part_does_not_unscreen_the_text_parts_beside_it(
    provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    """`unsafe_pass_non_json` lets what gate cannot read leave unscreened; the text parts of
    the same upload can be read, and must still be screened. One byte of non-UTF-8 in an
    extra part is enough to send a denied value in the next part."""
    from dataclasses import replace as dc_replace

    from gate.config import AskConfig, Config, parse_upstream
    from gate.proxy.server import BackgroundGate

    up = dc_replace(parse_upstream("openai", provider.url), unsafe_pass_non_json=True)
    config = dc_replace(
        Config(), port=0, ask=AskConfig(mode="never"), projects=(str(gate_dirs["project"]),)
    ).with_upstreams({"openai": up})
    server = BackgroundGate(config, gate_dirs["data"])
    listening = server.start()
    try:
        body = (
            (
                f'--{B}\r\nContent-Disposition: form-data; name="purpose"\r\n\r\n'
                f"notes {secret}\r\n"
                f'--{B}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\n'
                f"\r\n"
            ).encode()
            + b"\xff\xfe"
            + f"\r\n--{B}--\r\n".encode()
        )
        httpx.post(
            f"{listening.base_url}/openai/v1/files",
            content=body,
            headers={"content-type": f"multipart/form-data; boundary={B}"},
        )
    finally:
        server.stop()
    assert secret.encode() not in b"".join(s.body for s in provider.seen)


# -- F8: a resumable upload chunked with Content-Range (not X-Goog-Upload-*) ---------------


def test_f8_a_content_range_chunk_of_a_resumable_upload_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], secret: str
) -> None:
    """upload._one_chunk reads only X-Goog-Upload-Command/-Offset. Google's upload servers
    also take the older resumable protocol (`uploadType=resumable`, each chunk a request
    with `Content-Range: bytes A-B/TOTAL`): each half of a value is screened alone."""
    url = f"{gate.base_url}/openai/upload/v1beta/files?upload_id=u1"
    n, cut = len(secret), 12
    for start, end in ((0, cut), (cut, n)):
        httpx.post(
            url,
            content=secret[start:end].encode(),
            headers={"content-type": "text/plain", "content-range": f"bytes {start}-{end - 1}/{n}"},
        )
    got = [s.body for s in provider.seen]
    assert not (secret[:cut].encode() in got and secret[cut:].encode() in got), got


# -- F9: a short letters-and-digits password rides in user-agent or any x-app*/accept* header


@pytest.mark.parametrize(
    "header",
    ["user-agent", "x-app-note", "accept-note", "x-apple-id", "editor-note", "originator-x"],
)
def test_f9_a_short_alphanumeric_denied_value_in_an_informational_header_is_refused(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path], header: str
) -> None:
    """`_INFORMATIONAL` is matched as a name *prefix* and skips every denied value that
    is_word() (under 16 letters and digits: most passwords), not only the SDK's words;
    the all-headers check misses it too when the next header's value starts with a letter."""
    import secrets as pysecrets

    password = "Pw" + pysecrets.token_hex(6)  # 14 letters and digits
    (gate_dirs["project"] / ".env").write_text(f"DB_PASSWORD={password}\n")
    httpx.post(
        f"{gate.base_url}/anthropic/v1/messages",
        headers=[("x-api-key", "k"), (header, f"tool/{password}"), ("x-stainless-lang", "python")],
        json={"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
    )
    assert not _sent_anywhere(provider, password)
