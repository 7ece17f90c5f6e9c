"""The few detect-secrets filters gate's checks use, copied so screening starts without it.

detect-secrets (Apache-2.0, Yelp) loads every plugin and `requests` when any part of it is
imported, about half of `gate scan`'s start-up. These are its functions as published in
detect-secrets 1.5 (`filters/heuristic.py`, `plugins/jwt.py`); tests/screen/
test_borrowed.py checks they still agree with the installed detect-secrets.
"""

from __future__ import annotations

import base64
import json
import re
import string

_UUID = re.compile(r"[a-f0-9]{8}\-[a-f0-9]{4}\-[a-f0-9]{4}\-[a-f0-9]{4}\-[a-f0-9]{12}",
                   re.IGNORECASE)
_SEQUENCES = (
    string.ascii_uppercase + string.ascii_uppercase + string.digits + "+/",  # base64, letters
    string.digits + string.ascii_uppercase + string.ascii_uppercase + "+/",  # numbers first
    (string.digits + string.ascii_uppercase) * 2,  # alphanumeric
    string.digits * 2,
    string.hexdigits.upper() + string.hexdigits.upper(),
    string.ascii_uppercase + "=/",
)


def is_potential_uuid(secret: str) -> bool:
    return bool(_UUID.search(secret))


def is_sequential_string(secret: str) -> bool:
    upper = secret.upper()
    return any(upper in sequence for sequence in _SEQUENCES)


def is_templated_secret(secret: str) -> bool:
    """{secret}, <secret>, ${secret} (and, as detect-secrets has it, "" and "$")."""
    if not secret:
        return True
    if (secret[0] == "{" and secret[-1] == "}") or (secret[0] == "<" and secret[-1] == ">"):
        return True
    return secret[0] == "$" and (len(secret) < 2 or (secret[1] == "{" and secret[-1] == "}"))


def is_formally_valid_jwt(token: str) -> bool:
    """Every part base64url, the first two JSON."""
    for i, part_str in enumerate(token.split(".")):
        try:
            part = part_str.encode("ascii")
            m = len(part) % 4
            if m == 1:
                raise TypeError("Incorrect padding")
            part += b"==" if m == 2 else b"===" if m == 3 else b""
            decoded = base64.urlsafe_b64decode(part)
            if i < 2:
                json.loads(decoded.decode("utf-8"))
        except (TypeError, ValueError, UnicodeDecodeError):
            return False
    return True
