"""The people a shared gate serves: names, roles and the hashes of their tokens.

Each user has two tokens. The agent token (`gu_...`) goes in the agent's base URL or its
`x-gate-user-token` header, and says whose request it is; the person token (`gp_...`)
signs in to the control API and the approval page, and is never given to an agent, so an
agent cannot answer the questions gate asks about it. Only a sha256 of each token is kept,
in `<data>/users.json` (0600); a token is printed once, when it is made.

The file is read again whenever it changes on disk, so `gate users revoke` applies to the
next request of a running gate.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, replace
from enum import StrEnum
from pathlib import Path

from gate import dirs
from gate.errors import StateError

FILE = "users.json"
SCHEMA_VERSION = 1
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.@-]{0,63}$")
_TOKEN = re.compile(r"^g[up]_[A-Za-z0-9_-]{43}$")


class Kind(StrEnum):
    """What a token is for; the prefix says which, so a token pasted in the wrong place
    is refused by name."""

    AGENT = "gu_"
    PERSON = "gp_"


@dataclass(frozen=True, slots=True, kw_only=True)
class User:
    name: str
    admin: bool
    agent_hash: str  # sha256 hex of the agent token
    person_hash: str  # sha256 hex of the person token
    created: float
    revoked: float | None = None

    @property
    def active(self) -> bool:
        return self.revoked is None


@dataclass(frozen=True, slots=True)
class Issued:
    """A new user's tokens, shown once."""

    user: User
    agent_token: str
    person_token: str


def check_name(name: str) -> str:
    """A user name as the audit and the client certificate's CN carry it."""
    if not _NAME.match(name):
        raise ValueError(
            f"user name {name!r} is invalid: use 1-64 lowercase letters, digits"
            " and . _ @ - (starting with a letter or digit)"
        )
    return name


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def new_token(kind: Kind) -> str:
    return kind.value + secrets.token_urlsafe(32)


class Users:
    """users.json in a data dir. Lookups reread the file when it changed (its inode, size
    or mtime); a file gate cannot read lets nobody in (fail closed)."""

    def __init__(self, data_dir: Path):
        self.path = data_dir / FILE
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._users: tuple[User, ...] = ()
        self._hashes: dict[Kind, tuple[tuple[bytes, User], ...]] = {k: () for k in Kind}
        self._error: str | None = None

    # -- reading (the proxy) ---------------------------------------------------------------

    def all(self) -> tuple[User, ...]:
        """Every user, revoked ones included. Raises StateError when the file is unreadable."""
        with self._lock:
            self._refresh()
            if self._error is not None:
                raise StateError(
                    self._error,
                    where=str(self.path),
                    hint="fix or remove it; until then nobody is let in",
                )
            return self._users

    def active(self) -> tuple[User, ...]:
        return tuple(u for u in self.all() if u.active)

    def by_token(self, token: str, kind: Kind) -> User | None:
        """The active user whose `kind` token this is (None: no such user, revoked, or a
        token of the other kind). Every user's hash is compared, in constant time each."""
        if not _TOKEN.match(token) or not token.startswith(kind.value):
            return None
        given = digest(token).encode()
        self.all()  # reread if changed; raises when unreadable
        found = None
        for stored, user in self._hashes[kind]:
            if hmac.compare_digest(given, stored):
                found = user
        return found

    def by_name(self, name: str) -> User | None:
        """The active user of this name (a client certificate's CN)."""
        return next((u for u in self.active() if u.name == name), None)

    def _refresh(self) -> None:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._seen, self._users, self._error = None, (), None
            self._hashes = {k: () for k in Kind}
            return
        except OSError as exc:
            self._error = f"cannot read the users file ({exc.strerror})"
            return
        seen = (st.st_ino, st.st_size, st.st_mtime_ns)
        if seen == self._seen:
            return
        try:
            self._users, self._error = _parse(self.path.read_bytes()), None
        except (OSError, ValueError) as exc:
            self._users, self._error = (), f"cannot read the users file: {exc}"
        active = [u for u in self._users if u.active]
        self._hashes = {
            Kind.AGENT: tuple((u.agent_hash.encode(), u) for u in active),
            Kind.PERSON: tuple((u.person_hash.encode(), u) for u in active),
        }
        self._seen = seen

    # -- writing (`gate users`) ------------------------------------------------------------

    def add(self, name: str, admin: bool = False) -> Issued:
        check_name(name)
        with self._editing() as users:
            if any(u.name == name and u.active for u in users):
                raise ValueError(f"user {name!r} exists; revoke it first to issue new tokens")
            agent, person = new_token(Kind.AGENT), new_token(Kind.PERSON)
            user = User(
                name=name,
                admin=admin,
                agent_hash=digest(agent),
                person_hash=digest(person),
                created=time.time(),
            )
            users[:] = [u for u in users if u.name != name] + [user]
        return Issued(user, agent, person)

    def revoke(self, name: str) -> User:
        with self._editing() as users:
            for i, user in enumerate(users):
                if user.name == name and user.active:
                    users[i] = replace(user, revoked=time.time())
                    return users[i]
        raise ValueError(f"no active user {name!r} (`gate users list` shows them)")

    @contextlib.contextmanager
    def _editing(self) -> Iterator[list[User]]:
        """Read, change and replace the file under a lock, so two `gate users` at once do
        not lose each other's change."""
        dirs.private_dir(self.path.parent)
        lock_path = self.path.with_name(FILE + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                users = list(_parse(self.path.read_bytes()))
            except FileNotFoundError:
                users = []
            except ValueError as exc:
                raise StateError(
                    f"cannot read the users file: {exc}",
                    where=str(self.path),
                    hint="fix it, or move it aside to start over (every"
                    " user then needs a new token)",
                ) from exc
            yield users
            body = {"schemaVersion": SCHEMA_VERSION, "users": [asdict(u) for u in users]}
            dirs.write_private(self.path, json.dumps(body, indent=2).encode())
        finally:
            os.close(fd)


def _parse(raw: bytes) -> tuple[User, ...]:
    data = json.loads(raw)
    if not isinstance(data, dict) or not isinstance(data.get("users"), list):
        raise ValueError("expected {schemaVersion, users: [...]}")
    version = data.get("schemaVersion")
    if version != SCHEMA_VERSION:
        raise ValueError(
            f"schemaVersion {version!r} is not {SCHEMA_VERSION}: written by another gate version"
        )
    out = []
    for i, entry in enumerate(data["users"]):
        try:
            user = User(**entry)
            check_name(user.name)
            if not isinstance(user.admin, bool) or not all(
                isinstance(h, str) and len(h) == 64 for h in (user.agent_hash, user.person_hash)
            ):
                raise ValueError("admin must be true or false, and each hash 64 hex digits")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"users[{i}]: {exc}") from exc
        out.append(user)
    return tuple(out)
