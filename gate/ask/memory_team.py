"""Team answers (`--remember team`): decision memory every gate of a team shares, in PostgreSQL.

A team answer holds what a local one holds (a fingerprint, the kind, the answer, where it
applies: the repository, by its origin remote), under the team key (team_key.py) instead
of the install key, so the same value asked about on two gates matches. Each row is signed
with the team key and a row whose signature does not verify is ignored, so the database
alone (its credentials, a gate without the key) cannot make gate send anything. Any
failure to read means no team answer: the person is asked (fail closed).
"""

from __future__ import annotations

import hashlib
import hmac
import importlib.util
import json
import os
import secrets
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from loguru import logger

from gate.ask import team_key
from gate.ask.memory_file import ANSWERS, Remembered
from gate.ask.team_key import TeamKey
from gate.config import Config
from gate.errors import ConfigError, StateError

SCOPE = "team"
TTL_DAYS = 90
_SCHEMA_LOCK = 0x6761_7465_0002  # "gate" 2: one gate creates the tables at a time
# Append-only: never edit a migration that has shipped; add a new one.
MIGRATIONS = (
    """
    CREATE TABLE team_answers (
        id TEXT PRIMARY KEY, key_id TEXT NOT NULL, fingerprint TEXT NOT NULL,
        kind TEXT NOT NULL, answer TEXT NOT NULL, repo TEXT NOT NULL,
        created DOUBLE PRECISION NOT NULL, expires DOUBLE PRECISION NOT NULL,
        question_id TEXT NOT NULL, gate TEXT NOT NULL, signature TEXT NOT NULL,
        UNIQUE (key_id, fingerprint, kind, repo)
    );
    """,
)
_COLUMNS = (
    "id",
    "key_id",
    "fingerprint",
    "kind",
    "answer",
    "repo",
    "created",
    "expires",
    "question_id",
    "gate",
)
_SELECT = (
    "SELECT id, key_id, fingerprint, kind, answer, repo, created, expires, question_id,"
    " gate, signature FROM team_answers"
)
_INSERT = (
    "INSERT INTO team_answers (id, key_id, fingerprint, kind, answer, repo, created, expires,"
    " question_id, gate, signature) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (key_id, fingerprint, kind, repo) DO UPDATE SET id = EXCLUDED.id,"
    " answer = EXCLUDED.answer, created = EXCLUDED.created, expires = EXCLUDED.expires,"
    " question_id = EXCLUDED.question_id, gate = EXCLUDED.gate, signature = EXCLUDED.signature"
)


class TeamMemory:
    """Team answers in the database at `url`, readable and writable only with `key`.

    lookup and remember never raise: an unreachable database, a newer schema or a bad row
    decides nothing (the question is asked) and the log says why. entries and forget (the
    CLI's) raise StateError."""

    def __init__(
        self, url: str, key: TeamKey, *, timeout_s: float = 5.0, ttl_days: float = TTL_DAYS
    ):
        from gate.audit import pg  # psycopg only where a team memory is configured

        self.key = key
        self._pg = pg
        self._where = pg.redacted(url)
        self._pool = pg.pool(url, 4, timeout_s)
        self._ttl = ttl_days * 86400
        self._ready = False
        self._lock = threading.Lock()
        self._repos: dict[str, str | None] = {}

    def fingerprint(self, team_hash: str, kind: str) -> str:
        """The column looked up: kind and the value's team hash, under the team key."""
        return hmac.new(
            self.key.answer, kind.encode() + b"\0" + team_hash.encode(), hashlib.sha256
        ).hexdigest()

    def repo_of(self, project: str | None) -> str | None:
        """Where a team answer applies: the project's repository, by its origin remote."""
        if project is None:
            return None
        with self._lock:
            if project not in self._repos:
                self._repos[project] = repository(project)
            return self._repos[project]

    def lookup(
        self, fingerprints: Sequence[tuple[str, str]], repo: str | None
    ) -> dict[tuple[str, str], Remembered]:
        """The team answers for these (fingerprint, kind) pairs in `repo`; {} when the
        database cannot be read."""
        if repo is None or not fingerprints:
            return {}
        try:
            # IN with one placeholder each, not = ANY(array): psycopg prepares a query run
            # often, and PostgreSQL's generic plan for ANY($1) scans the whole table.
            marks = ", ".join(["%s"] * len(fingerprints))
            rows = self._rows(
                _SELECT + " WHERE key_id = %s AND repo = %s AND expires > %s"
                " AND fingerprint IN (" + marks + ")",
                (self.key.id, repo, time.time(), *(f for f, _ in fingerprints)),
            )
        except StateError as exc:
            logger.error("team decision memory unusable, asking instead: {}", exc.diagnostics())
            return {}
        wanted = set(fingerprints)
        return {(e.fingerprint, e.kind): e for e in rows if (e.fingerprint, e.kind) in wanted}

    def remember(
        self, fingerprint: str, kind: str, answer: str, *, repo: str, question_id: str
    ) -> Remembered | None:
        """Store a team answer (replacing the one for the same content and repository);
        None when it cannot be stored (the person is asked again next time)."""
        if answer not in ANSWERS:
            raise ValueError(f"answer must be one of {sorted(ANSWERS)}, not {answer!r}")
        now = time.time()
        row = {
            "id": "t" + secrets.token_hex(5),
            "key_id": self.key.id,
            "fingerprint": fingerprint,
            "kind": kind,
            "answer": answer,
            "repo": repo,
            "created": now,
            "expires": now + self._ttl,
            "question_id": question_id,
            "gate": socket.gethostname(),
        }
        values = [row[c] for c in _COLUMNS]
        try:
            self._execute(_INSERT, (*values, self._sign(values)))
        except StateError as exc:
            logger.error(
                "decision {} not remembered for the team: {}", question_id, exc.diagnostics()
            )
            return None
        return _remembered(row)

    def entries(self) -> list[Remembered]:
        """Every live team answer under this key, oldest first. Raises StateError."""
        rows = self._rows(
            _SELECT + " WHERE key_id = %s AND expires > %s ORDER BY created",
            (self.key.id, time.time()),
        )
        return list(rows)

    def forget(self, entry_id: str) -> bool:
        """Drop a team answer by id, for every gate; False if there is none under this key.
        Raises StateError."""
        return (
            self._execute(
                "DELETE FROM team_answers WHERE id = %s AND key_id = %s", (entry_id, self.key.id)
            )
            > 0
        )

    def close(self) -> None:
        self._pool.close()

    # -- the database -----------------------------------------------------------------

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[Remembered]:
        out = []
        for values in self._run(sql, args, fetch=True):
            *fields, signature = values
            if not hmac.compare_digest(signature, self._sign(fields)):
                # Written without the team key (or altered since): never applied.
                logger.warning(
                    "team answer {} in {} has a bad signature; ignored", fields[0], self._where
                )
                continue
            out.append(_remembered(dict(zip(_COLUMNS, fields, strict=True))))
        return out

    def _execute(self, sql: str, args: tuple[Any, ...]) -> int:
        return int(self._run(sql, args, fetch=False))

    def _run(self, sql: str, args: tuple[Any, ...], *, fetch: bool) -> Any:
        try:
            with self._pool.connection() as conn:
                self._migrate(conn)
                cur = conn.execute(sql, args)  # our own constant SQL, values as parameters
                return cur.fetchall() if fetch else cur.rowcount
        except self._pg.Error as exc:
            raise StateError(
                f"the team decision memory at {self._where} cannot be used"
                f" ({type(exc).__name__}: {_first_line(exc)})",
                where="decisions.url",
                hint="check that PostgreSQL is running and reachable",
            ) from exc

    def _migrate(self, conn: Any) -> None:
        """Create or upgrade the tables once per gate; refuse a newer schema."""
        if self._ready:
            return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            conn.execute(
                "CREATE TABLE IF NOT EXISTS team_answers_schema (version INTEGER NOT NULL)"
            )
            current = (
                conn.execute("SELECT MAX(version) FROM team_answers_schema").fetchone()[0] or 0
            )
            if current > len(MIGRATIONS):
                raise StateError(
                    f"the team answers' schema is version {current}, newer than"
                    f" this gate reads ({len(MIGRATIONS)})",
                    where=self._where,
                    hint="upgrade gate on every machine of the team",
                )
            for version in range(current + 1, len(MIGRATIONS) + 1):
                conn.execute(MIGRATIONS[version - 1])
                conn.execute("INSERT INTO team_answers_schema VALUES (%s)", (version,))
        self._ready = True

    def _sign(self, values: Sequence[Any]) -> str:
        message = json.dumps([repr(v) if isinstance(v, float) else v for v in values])
        return hmac.new(self.key.sign, message.encode(), hashlib.sha256).hexdigest()


def repository(project: str) -> str | None:
    """The project's origin remote as host/path (no user, port, scheme or .git), so every
    clone of one repository names it alike; None without one."""
    try:
        done = subprocess.run(
            ["git", "-C", project, "config", "--get", "remote.origin.url"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return normalised_remote(done.stdout.strip()) if done.returncode == 0 else None


def normalised_remote(url: str) -> str | None:
    """`git@github.com:org/api.git`, `https://me@github.com/org/api` → `github.com/org/api`."""
    if not url:
        return None
    if "://" in url:
        parts = urlsplit(url)
        host, path = (parts.hostname or ""), parts.path
    elif ":" in url.split("/", 1)[0]:  # scp-like: user@host:path
        where, _, path = url.partition(":")
        host = where.rpartition("@")[2]
    else:  # a local path: a repository of this machine only
        return None
    path = path.strip("/").removesuffix(".git").strip("/")
    return f"{host.lower()}/{path}" if host and path else None


def _remembered(row: dict[str, Any]) -> Remembered:
    return Remembered(
        id=row["id"],
        fingerprint=row["fingerprint"],
        kind=row["kind"],
        answer=row["answer"],
        scope=SCOPE,
        session=None,
        project=row["repo"],
        created=row["created"],
        expires=row["expires"],
        question_id=row["question_id"],
    )


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else "no detail"


def private_files(key: TeamKey | None) -> tuple[Path, ...]:
    """Files an agent must never read (a lock refuses to start where it could)."""
    return (key.path,) if key is not None else ()


def from_config(config: Config) -> TeamMemory | None:
    """The team memory `decisions.team_key_file` asks for, in `decisions.url` or else the
    audit's database; None without a team key (then no team answer is read or written).
    Raises ConfigError for a bad key file or no database to keep team answers in."""
    d = config.decisions
    if d.team_key_file is None:
        return None
    key = team_key.load(d.team_key_file)
    url = d.url or os.environ.get("GATE_AUDIT_URL") or config.audit.url
    if url is None:
        raise ConfigError(
            "team answers need a PostgreSQL database",
            where="decisions.team_key_file",
            hint="set audit.url (the team's shared audit) or decisions.url",
        )
    host = urlsplit(url).hostname
    if host and config.egress.listed(host):
        # A locked agent may reach hosts on egress.allow: it must not reach the team's
        # answers (nor the audit) with credentials it can read in the home dir.
        raise ConfigError(
            f"the team database's host {host} is on egress.allow, so a locked agent could reach it",
            where="egress.allow",
            hint="remove it from egress.allow",
        )
    if importlib.util.find_spec("psycopg_pool") is None:
        raise ConfigError(
            "team answers in PostgreSQL need psycopg and psycopg_pool",
            where="decisions.team_key_file",
            hint="pip install 'gate[postgres]'",
        )
    return TeamMemory(url, key, timeout_s=config.audit.lock_timeout_ms / 1000)
