"""A credential header passes as it is when it is one token, even a denied file's value
(the caller's key is often kept in the denied `.env`); a denied value inside or beside
the credential, several of them, or one encoded into it is refused (gate/screen/envelope.py)."""

from __future__ import annotations

import base64
import json
import os
import urllib.parse

import pytest

from gate.rules.model import Effect, Rule
from gate.screen.disclose import Scrub
from gate.screen.envelope import Envelope
from gate.screen.fingerprints import DeniedIndex, Source

_RULE = Rule(
    effect=Effect.DENY, tool="Read", specifier="./.env", source="r.yaml", line=1, root=None
)
KEY = "sk-ant-api03-" + os.urandom(24).hex()  # the caller's key, kept in the denied .env
OTHER = "Pw" + os.urandom(10).hex()  # another value of that file
EMAIL = f"dev{os.urandom(3).hex()}@example.com"
_INDEX = DeniedIndex({v: Source("/p/.env", _RULE) for v in (KEY, OTHER, EMAIL)})
ENVELOPE = Envelope(Scrub(secrets=None, indexes=(_INDEX,)))
CREDENTIALS = frozenset({"authorization", "x-api-key"})


def _why(
    headers: list[tuple[str, str]], path: str = "/v1/messages", google: bool = False
) -> str | None:
    return ENVELOPE.refusal(path, headers, google, CREDENTIALS)


def _b64url(obj: object) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).decode().rstrip("=")


def _jwt(claims: dict[str, object], signature: str = "") -> str:
    head = _b64url({"alg": "RS256", "typ": "JWT"})
    return f"{head}.{_b64url(claims)}.{signature or os.urandom(16).hex()}"


@pytest.mark.parametrize(
    "headers",
    [
        [("x-api-key", KEY)],
        [("Authorization", f"Bearer {KEY}")],
        [("authorization", f"bearer  {OTHER} ")],
        [("authorization", "Basic " + base64.b64encode(f"me:{OTHER}".encode()).decode())],
        [("authorization", "Basic " + base64.b64encode(f"me:{KEY}".encode()).decode())],
        # ChatGPT's sign-in token: its claims hold the e-mail address the .env also holds.
        [("authorization", "Bearer " + _jwt({"email": EMAIL, "sub": "auth0|x"}))],
        [("x-api-key", "sk-ant-test")],
    ],
    ids=["key", "bearer", "spaced", "basic", "basic-email", "jwt", "other"],
)
def test_a_credential_that_is_one_token_passes(headers: list[tuple[str, str]]) -> None:
    assert _why(headers) is None


def _hex(v: str) -> str:
    return v.encode().hex()


# A denied value inside, beside or encoded in a credential (made at run time: each xdist
# worker makes its own values, so the test ids number them).
_FORMS = [
    f"k-{OTHER}",
    f"{KEY} {OTHER}",
    f"Bearer {KEY}{OTHER}",
    f"Bearer {KEY} {OTHER}",
    f"Bearer {OTHER},{KEY}",
    f"{OTHER}:{KEY}",
    base64.b64encode(OTHER.encode()).decode(),
    f"Bearer {base64.b64encode(f'STRIPE={OTHER}'.encode()).decode()}",
    f"Bearer {_hex(OTHER)}",
    urllib.parse.quote(f"a={OTHER}&b=1", safe=""),
    OTHER.upper(),  # `tr a-z A-Z`: not the value as written
    "Basic " + base64.b64encode(f"me:{OTHER}!".encode()).decode(),
    "Basic " + base64.b64encode(f"{OTHER}x:y".encode()).decode(),
    "Basic !!" + OTHER,  # no base64: read whole
    f"{OTHER} Bearer",
    f"Bearer {_jwt({'sub': 'x'}, signature=OTHER)}",
]


@pytest.mark.parametrize("value", _FORMS, ids=[f"form{i}" for i in range(len(_FORMS))])
@pytest.mark.parametrize("name", ["x-api-key", "Authorization"])
def test_a_denied_value_inside_or_beside_a_credential_is_refused(name: str, value: str) -> None:
    why = _why([(name, value)])
    assert why is not None and f"the {name.lower()} header" in why
    assert OTHER not in why and KEY not in why


def test_a_google_key_is_read_as_a_credential_too() -> None:
    path = "/v1beta/models/g:generateContent?alt=sse&key="
    assert _why([], path + KEY, google=True) is None
    why = _why([], path + urllib.parse.quote(f"{KEY}/{OTHER}", safe=""), google=True)
    assert why is not None and "key=" in why and KEY not in why
    assert _why([], path + "AIza" + OTHER, google=True) is not None


@pytest.mark.parametrize(
    "headers",
    [
        [("x-api-key", KEY), ("authorization", f"Bearer {OTHER}")],
        [("authorization", "Basic " + base64.b64encode(f"{KEY}:{OTHER}".encode()).decode())],
        [("authorization", "Basic " + base64.b64encode(f"{EMAIL}:{OTHER}".encode()).decode())],
    ],
    ids=["two-headers", "basic-two", "basic-email"],
)
def test_two_denied_values_as_credentials_are_refused(headers: list[tuple[str, str]]) -> None:
    why = _why(headers)
    assert why is not None and "more than one" in why and OTHER not in why


def test_the_same_key_in_two_credential_headers_passes() -> None:
    assert _why([("x-api-key", KEY), ("authorization", f"Bearer {KEY}")]) is None
    path = "/v1beta/models/g:generateContent?key=" + KEY
    assert _why([("authorization", f"Bearer {OTHER}")], path, google=True) is not None
