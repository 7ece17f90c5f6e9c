"""The team key: a secret file every gate of a team holds, from which team answers' keys come.

Team answers (`--remember team`) are shared through PostgreSQL, so their fingerprints must
be the same on every gate: a keyed hash under this key, not under one install's key. The
key also signs each team answer, so a database user without it cannot write one, and it is
never written to the database (only a short id of it, to tell keys apart).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from gate.errors import ConfigError

MIN_BYTES = 32
_WHERE = "decisions.team_key_file"


@dataclass(frozen=True, slots=True, kw_only=True)
class TeamKey:
    """Keys derived from the team key file, one per use, so none is used for two things."""

    path: Path
    value: bytes  # the keyed hash of a value the team answers about
    answer: bytes  # the fingerprint of (kind, value hash): the column looked up
    sign: bytes  # the signature over a whole team answer row
    id: str  # names this key in the database (not a key itself)

    @classmethod
    def derive(cls, path: Path, secret: bytes) -> TeamKey:
        def sub(label: str) -> bytes:
            return hmac.new(secret, b"gate team key: " + label.encode(), hashlib.sha256).digest()

        return cls(
            path=path,
            value=sub("value"),
            answer=sub("answer"),
            sign=sub("sign"),
            id=sub("id").hex()[:16],
        )


def load(path: Path) -> TeamKey:
    """Read and check the team key file: a regular file of ours, owner-only (0600), at least
    32 bytes. Errors name the file and say how to fix it; the key is never in a message."""
    where = f"{_WHERE}: {path}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError as exc:
        raise ConfigError(
            "the team key file does not exist",
            where=where,
            hint="mount the team's key there (`head -c 32 /dev/urandom >"
            " team.key; chmod 600 team.key`), or remove decisions.team_key_file",
        ) from exc
    except OSError as exc:  # a symlink (ELOOP) or unreadable
        raise ConfigError(
            f"cannot open the team key file ({exc.strerror})",
            where=where,
            hint="name the file itself, not a symlink, readable by gate's user",
        ) from exc
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise ConfigError("the team key is not a regular file", where=where)
        if st.st_mode & 0o077:
            raise ConfigError(
                f"the team key file is readable by others (mode {stat.S_IMODE(st.st_mode):04o})",
                where=where,
                hint=f"chmod 600 {path}",
            )
        if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
            raise ConfigError(
                "the team key file belongs to another user",
                where=where,
                hint="give it to the user gate runs as (chown), mode 0600",
            )
        secret = f.read(4096).strip()
    if len(secret) < MIN_BYTES:
        raise ConfigError(
            f"the team key is {len(secret)} bytes; at least {MIN_BYTES} are needed",
            where=where,
            hint="head -c 32 /dev/urandom > team.key",
        )
    return TeamKey.derive(path, secret)


def value_hash(value: str, key: bytes) -> str:
    """The team's keyed hash of a value: the same on every gate holding the team key."""
    return hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()
