"""What forward mode relays unread is screened as opaque text (gate/screen/relayed.py): a
denied value or a high-tier secret anywhere in it, in any form the screens read, refuses
it; the caller's own credential to the host that issued it does not."""

from __future__ import annotations

import base64
import gzip
import os
import random
import urllib.parse
import zlib
from dataclasses import replace

import brotli
import pytest
import zstandard

from gate.rules.engine import Policy
from gate.rules.layers import PolicyStore
from gate.rules.model import Effect, Rule, SecretAction
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import DeniedIndex, Source
from gate.screen.relayed import Relayed, refusal
from gate.screen.secrets import Scanner
from screen.secrets_corpus import B64URL, Gen

_RULE = Rule(
    effect=Effect.DENY, tool="Read", specifier="./.env", source="r.yaml", line=1, root=None
)
VALUE = "sk_live_" + os.urandom(12).hex()  # a denied file's value, made at run time
_INDEX = DeniedIndex({VALUE: Source("/p/.env", _RULE)})
_SECRETS = SecretScreen(Scanner(), b"k" * 32)
_POLICY = PolicyStore().policy_for(None)


def _gen() -> Gen:
    return Gen(random.SystemRandom().randrange(1 << 30))


def _why(body: bytes = b"", path: str = "/backend-api/ps/mcp", **kw: object) -> str | None:
    headers = kw.pop("headers", ())
    req = Relayed(host="chatgpt.com", path=path, headers=headers, body=body, **kw)  # type: ignore[arg-type]
    return refusal(req, _POLICY, _INDEX, _SECRETS)


_ENV = f"# app\nSTRIPE_KEY={VALUE}\nDEBUG=true\n".encode()


@pytest.mark.parametrize(
    ("body", "coding"),
    [
        (_ENV, None),
        (gzip.compress(_ENV), "gzip"),
        (zlib.compress(_ENV), "deflate"),
        (brotli.compress(_ENV), "br"),
        (zstandard.ZstdCompressor().compress(_ENV), "zstd"),
        (gzip.compress(_ENV), None),  # `gzip -c .env | curl --data-binary @-`
        (base64.b64encode(_ENV), None),
        (base64.b64encode(gzip.compress(_ENV)), None),
        (urllib.parse.quote(_ENV.decode()).encode(), None),
        (b'{"q": "' + _ENV.replace(b"\n", b"\\n") + b'"}', None),
        (b'{"a": "' + VALUE[:14].encode() + b'", "b": "' + VALUE[14:].encode() + b'"}', None),
        (
            b"--b\r\ncontent-disposition: form-data; name=f; filename=x\r\n"
            b"content-transfer-encoding: base64\r\n\r\n"
            + base64.encodebytes(_ENV)
            + b"\r\n--b--\r\n",
            None,
        ),
        (b"BZh9" + _ENV, None),  # a compression signature that inflates to nothing
        (gzip.compress(b"hello") + _ENV, None),  # what follows a compressed stream
    ],
    ids=[
        "plain",
        "gzip",
        "deflate",
        "br",
        "zstd",
        "raw-gzip",
        "base64",
        "base64-gzip",
        "percent",
        "json",
        "cut-in-two",
        "multipart-base64",
        "bzip2-lookalike",
        "after-a-stream",
    ],
)
def test_a_denied_value_in_the_body_refuses_it(body: bytes, coding: str | None) -> None:
    headers = [("content-encoding", coding)] if coding else []
    why = _why(body, headers=headers)
    assert why is not None and "the request body holds a value from /p/.env" in why
    assert "Read(./.env)" in why and VALUE not in why


def test_a_denied_value_in_the_query_or_a_header_refuses_it() -> None:
    query = _why(path=f"/backend-api/x?q={urllib.parse.quote(VALUE)}")
    assert query is not None and "query string" in query and VALUE not in query
    header = _why(headers=[("x-note", base64.b64encode(VALUE.encode()).decode())])
    assert header is not None and "'x-note' header" in header


def test_a_high_tier_secret_refuses_it_wherever_it_is() -> None:
    token = _gen().crc_token("ghp_")
    for why in (
        _why(f'{{"arguments": {{"note": "{token}"}}}}'.encode()),
        _why(path=f"/x?t={token}"),
        _why(headers=[("cookie", f"t={token}")]),
    ):
        assert why is not None and token not in why
    assert "likely secret (github-token" in (_why(token.encode()) or "")


def test_the_callers_credential_header_passes_only_where_the_host_reads_it() -> None:
    token = _gen().crc_token("ghp_")
    auth = [("authorization", f"Bearer {token}")]
    assert _why(headers=auth, credentials=frozenset({"authorization"}), decrypted=True) is None
    # Plain HTTP to another host: gate cannot tell whose credential it is.
    assert "'authorization' header" in (_why(headers=auth) or "")


def test_a_denied_value_beside_the_callers_credential_is_refused() -> None:
    creds = {"credentials": frozenset({"authorization"}), "decrypted": True}
    assert _why(headers=[("authorization", f"Bearer {VALUE}")], **creds) is None
    for value in (f"Bearer {VALUE}.x", "Bearer " + base64.b64encode(_ENV).decode()):
        why = _why(headers=[("authorization", value)], **creds)
        assert why is not None and "beside the credential" in why and VALUE not in why


def test_a_sign_in_secret_passes_only_to_the_host_that_issued_it() -> None:
    secret = "GOCSPX-" + _gen().chars(B64URL, 28)
    body = f"client_id=x.apps.googleusercontent.com&client_secret={secret}".encode()
    issuer = Relayed(host="oauth2.googleapis.com", path="/token", headers=(), body=body)
    assert refusal(issuer, _POLICY, _INDEX, _SECRETS) is not None  # named over plain HTTP
    assert refusal(replace(issuer, decrypted=True), _POLICY, _INDEX, _SECRETS) is None
    assert "google-oauth-secret" in (_why(body, decrypted=True) or "")  # to chatgpt.com


def test_ordinary_bodies_and_low_tier_findings_pass() -> None:
    assert _why(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}') is None
    assert _why(b"") is None
    # Generic findings (a password assignment) are too uncertain to refuse a request for.
    assert _why(b"password = 'hunter2hunter2'\n") is None


@pytest.mark.parametrize(
    ("body", "coding", "says"),
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00" + os.urandom(64), None, "not UTF-8 text"),
        (b"not gzip at all", "gzip", "gzip"),
        (b"x", "compress", "unknown content-coding"),
    ],
    ids=["binary", "bad-gzip", "unknown-coding"],
)
def test_a_body_gate_cannot_read_refuses_it(body: bytes, coding: str | None, says: str) -> None:
    headers = [("content-encoding", coding)] if coding else []
    why = _why(body, headers=headers)
    assert why is not None and "cannot read the request body" in why and says in why


def test_a_body_that_decodes_past_the_limit_refuses_it() -> None:
    bomb = gzip.compress(b"\0" * (65 << 20), compresslevel=1)
    why = _why(bomb, headers=[("content-encoding", "gzip")])
    assert why is not None and "more than 64 MiB" in why


def _policy(**settings: SecretAction) -> Policy:
    return replace(_POLICY, secrets=(("trusted", (tuple(settings.items()),)),))


def test_the_secrets_policy_decides_as_for_a_field_gate_cannot_edit() -> None:
    """Block refuses at any tier; allow lets a high-tier secret go; redact and ask, which
    cannot be done in place, refuse a high-tier one."""
    generic = b"password = 'hunter2hunter2'\n"
    req = Relayed(host="chatgpt.com", path="/", headers=(), body=generic)
    blocked = refusal(req, _policy(low=SecretAction.BLOCK), _INDEX, _SECRETS)
    assert blocked is not None and "the secrets policy blocks it (the request body)" in blocked
    token = replace(req, body=_gen().crc_token("ghp_").encode())
    assert refusal(token, _policy(high=SecretAction.ALLOW), _INDEX, _SECRETS) is None
    for action in (SecretAction.REDACT, SecretAction.ASK):
        assert refusal(token, _policy(high=action), _INDEX, _SECRETS) is not None
