"""Fake credentials made at run time for the demo and the canary (never a real secret)."""

from __future__ import annotations

import secrets
import string
import zlib

_B62 = string.digits + string.ascii_uppercase + string.ascii_lowercase


def env_value() -> str:
    """A value for `.env` that only this run knows."""
    return "demo-" + secrets.token_hex(16)


def github_token() -> str:
    """A token shaped as GitHub's (`ghp_`, 30 characters, a CRC32 checksum), so gate's
    detector knows it; its body is random, so it was never a real token."""
    body = "".join(secrets.choice(_B62) for _ in range(30))
    n, check = zlib.crc32(body.encode()), ""
    while n:
        n, r = divmod(n, 62)
        check = _B62[r] + check
    return "gh" + "p_" + body + check.rjust(6, "0")
