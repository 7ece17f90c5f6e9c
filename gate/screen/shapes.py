"""Shapes that say a candidate is not a secret (a UUID, a run of the alphabet, a template)
and the JWT shape check, written for gate so screening starts without importing
detect-secrets (which loads every plugin and `requests` on import). They keep
detect-secrets' verdicts, which the checks relied on before: tests/screen/test_shapes.py
compares them with the installed detect-secrets on crafted and random values."""

from __future__ import annotations

import base64
import json
import re
import string

_UUID = re.compile(r"[0-9a-f]{8}(?:-[0-9a-f]{4}){3}-[0-9a-f]{12}", re.IGNORECASE)
_UPPER, _DIGITS = string.ascii_uppercase, string.digits
_HEX = _DIGITS + "ABCDEF" + "ABCDEF"  # both cases of a-f, upper-cased
# A value is sequential when, upper-cased, it lies inside one of these runs.
_RUNS = (
    _UPPER * 2 + _DIGITS + "+/",
    _DIGITS + _UPPER * 2 + "+/",
    (_DIGITS + _UPPER) * 2,
    _DIGITS * 2,
    _HEX * 2,
    _UPPER + "=/",
)
_BRACKETS = {("{", "}"), ("<", ">")}


def is_potential_uuid(value: str) -> bool:
    return _UUID.search(value) is not None


def is_sequential_string(value: str) -> bool:
    upper = value.upper()
    return any(upper in run for run in _RUNS)


def is_templated_secret(value: str) -> bool:
    """A placeholder: `{name}`, `<name>`, `${name}`, a lone `$`, or nothing."""
    if not value:
        return True
    if len(value) > 1 and (value[0], value[-1]) in _BRACKETS:
        return True
    return value[0] == "$" and (len(value) == 1 or (value[1] == "{" and value[-1] == "}"))


def is_formally_valid_jwt(token: str) -> bool:
    """Every dot-separated part decodes as base64url, and the first two as JSON."""
    for i, part in enumerate(token.split(".")):
        try:
            raw = part.encode("ascii")
            if len(raw) % 4 == 1:
                return False  # no base64 text has this length
            decoded = base64.urlsafe_b64decode(raw + b"=" * (-len(raw) % 4))
            if i < 2:
                json.loads(decoded.decode("utf-8"))
        except ValueError:
            return False
    return True
