"""Team answers (`--remember team`): decision memory every gate of a team shares, in PostgreSQL.

A team answer holds what a local one holds (a fingerprint, the kind, the answer, where it
applies: the repository, by its origin remote), under the team key (team_key.py) instead
of the install key, so the same value asked about on two gates matches. Each row is signed
with the team key over every field, and a row whose signature does not verify is ignored,
so the database alone (its credentials, a gate without the key) cannot write an answer.

It can still hand back an old signed row (saved before the team replaced or forgot it).
So a row also carries a signed generation, one more than the last for the same content
and repository: the newest valid row decides, a forget is a signed row too (`forgotten`),
and each gate remembers the newest generation it saw (team_marks.py) and refuses an older
one. A gate that never saw the newer row cannot tell it was deleted: that is the limit.
Any failure to read means no team answer: the person is asked (fail closed).
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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from loguru import logger

from gate import dirs
from gate.ask import team_key
from gate.ask.choices import Scope
from gate.ask.memory_file import ANSWERS, Remembered
from gate.ask.team_key import TeamKey
from gate.ask.team_marks import Slot, TeamMarks, marks_path
from gate.config import Config
from gate.errors import ConfigError, StateError

SCOPE = Scope.TEAM
TTL_DAYS = 90
FORGOTTEN = "forgotten"  # the answer of a signed row that forgets the ones before it
_SCHEMA_LOCK = 0x6761_7465_0002  # "gate" 2: one gate creates the tables at a time
_WRITE_LOCK = 0x6761_7465_0003  # "gate" 3: one gate numbers a new generation at a time
_SIGNED_AS = "gate team answer v2"  # rows signed before generations never verify now
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
    # 2: a signed generation per (key, content, kind, repository), so a replayed older row
    # loses to the newer one. Rows signed without it can no longer verify: dropped (the
    # question is asked again once).
    """
    DELETE FROM team_answers;
    ALTER TABLE team_answers DROP CONSTRAINT team_answers_key_id_fingerprint_kind_repo_key;
    ALTER TABLE team_answers ADD COLUMN generation BIGINT NOT NULL DEFAULT 0;
    ALTER TABLE team_answers ADD CONSTRAINT team_answers_generation
        UNIQUE (key_id, fingerprint, kind, repo, generation);
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
    "generation",
)
_SELECT = (
    "SELECT id, key_id, fingerprint, kind, answer, repo, created, expires, question_id,"
    " gate, generation, signature FROM team_answers"
)
_INSERT = (
    "INSERT INTO team_answers (id, key_id, fingerprint, kind, answer, repo, created, expires,"
    " question_id, gate, generation, signature)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
)
_TOP = (
    "SELECT COALESCE(MAX(generation), 0) FROM team_answers"
    " WHERE key_id = %s AND fingerprint = %s AND kind = %s AND repo = %s"
)
_SUPERSEDED = (
    "DELETE FROM team_answers"
    " WHERE key_id = %s AND fingerprint = %s AND kind = %s AND repo = %s AND generation < %s"
)

Row = dict[str, Any]


class TeamMemory:
    """Team answers in the database at `url`, readable and writable only with `key`.

    lookup and remember never raise: an unreachable database, a newer schema or a bad row
    decides nothing (the question is asked) and the log says why. entries and forget (the
    CLI's) raise StateError. `marks` keeps the generations this gate saw (in memory only
    when None)."""

    def __init__(
        self,
        url: str,
        key: TeamKey,
        *,
        timeout_s: float = 5.0,
        ttl_days: float = TTL_DAYS,
        marks: TeamMarks | None = None,
    ):
        from gate.audit import pg  # psycopg only where a team memory is configured

        self.key = key
        self.marks = marks if marks is not None else TeamMarks()
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
        database cannot be read. One query: every generation of those answers."""
        if repo is None or not fingerprints:
            return {}
        try:
            # IN with one placeholder each, not = ANY(array): psycopg prepares a query run
            # often, and PostgreSQL's generic plan for ANY($1) scans the whole table.
            marks = ", ".join(["%s"] * len(fingerprints))
            rows = self._rows(
                _SELECT + " WHERE key_id = %s AND repo = %s AND fingerprint IN (" + marks + ")",
                (self.key.id, repo, *(f for f, _ in fingerprints)),
            )
        except StateError as exc:
            logger.error("team decision memory unusable, asking instead: {}", exc.diagnostics())
            return {}
        wanted = set(fingerprints)
        return {
            (e.fingerprint, e.kind): e
            for e in self._live(rows)
            if (e.fingerprint, e.kind) in wanted
        }

    def remember(
        self, fingerprint: str, kind: str, answer: str, *, repo: str, question_id: str
    ) -> Remembered | None:
        """Store a team answer (superseding the one for the same content and repository);
        None when it cannot be stored (the person is asked again next time)."""
        if answer not in ANSWERS:
            raise ValueError(f"answer must be one of {sorted(ANSWERS)}, not {answer!r}")
        try:
            row = self._append((self.key.id, fingerprint, kind, repo), answer, question_id)
        except StateError as exc:
            logger.error(
                "decision {} not remembered for the team: {}", question_id, exc.diagnostics()
            )
            return None
        return _remembered(row)

    def entries(self) -> list[Remembered]:
        """Every live team answer under this key, oldest first. Raises StateError."""
        rows = self._rows(_SELECT + " WHERE key_id = %s", (self.key.id,))
        return sorted(self._live(rows), key=lambda e: e.created)

    def forget(self, entry_id: str) -> bool:
        """Forget a team answer by id, for every gate, with a signed `forgotten` row that
        supersedes it; False if it is not a live answer under this key. Raises StateError."""
        live = {e.id: e for e in self.entries()}
        if (e := live.get(entry_id)) is None or e.project is None:
            return False
        self._append((self.key.id, e.fingerprint, e.kind, e.project), FORGOTTEN, e.question_id)
        return True

    def close(self) -> None:
        self._pool.close()

    # -- choosing the newest valid row ------------------------------------------------

    def _live(self, rows: list[Row]) -> list[Remembered]:
        """The newest valid row per answer, when it is an answer and not expired. An answer
        whose newest row is older than one this gate saw was rolled back: none applies."""
        newest: dict[Slot, Row] = {}
        for row in rows:
            slot = _slot(row)
            if slot not in newest or row["generation"] > newest[slot]["generation"]:
                newest[slot] = row
        seen = {}
        out = []
        now = time.time()
        for slot, row in newest.items():
            known = self.marks.get(slot)
            if row["generation"] < known:
                logger.warning(
                    "team answer {} in {} is generation {}, older than the {} this gate saw:"
                    " a newer row was removed or an old one put back; ignored",
                    row["id"],
                    self._where,
                    row["generation"],
                    known,
                )
                continue
            seen[slot] = row["generation"]
            if row["answer"] in ANSWERS and row["expires"] > now:
                out.append(_remembered(row))
        self.marks.raise_to(seen)
        return out

    # -- the database -----------------------------------------------------------------

    def _append(self, slot: Slot, answer: str, question_id: str) -> Row:
        """Write the next generation of `slot` and drop the ones it supersedes (keeping
        them would protect nothing: whoever could replay one has saved it)."""

        def write(conn: Any) -> Row:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_WRITE_LOCK,))
            top = conn.execute(_TOP, slot).fetchone()[0]
            now = time.time()
            row = dict(
                zip(("key_id", "fingerprint", "kind", "repo"), slot, strict=True),
                id="t" + secrets.token_hex(5),
                answer=answer,
                created=now,
                expires=now + self._ttl,
                question_id=question_id,
                gate=socket.gethostname(),
                # Above what the database holds and what this gate saw, so a rolled-back
                # database never makes a new answer lose to a replayed one.
                generation=max(int(top), self.marks.get(slot)) + 1,
            )
            values = [row[c] for c in _COLUMNS]
            conn.execute(_INSERT, (*values, self._sign(values)))
            conn.execute(_SUPERSEDED, (*slot, row["generation"]))
            return row

        row: Row = self._transaction(write)
        self.marks.raise_to({slot: row["generation"]})
        return row

    def _rows(self, sql: str, args: tuple[Any, ...]) -> list[Row]:
        out = []

        def read(conn: Any) -> list[tuple[Any, ...]]:
            return list(conn.execute(sql, args).fetchall())

        for values in self._transaction(read, atomic=False):  # one statement: no BEGIN
            *fields, signature = values
            if not hmac.compare_digest(signature, self._sign(fields)):
                # Written without the team key (or altered since): never applied.
                logger.warning(
                    "team answer {} in {} has a bad signature; ignored", fields[0], self._where
                )
                continue
            out.append(dict(zip(_COLUMNS, fields, strict=True)))
        return out

    def _transaction(self, work: Callable[[Any], Any], *, atomic: bool = True) -> Any:
        try:
            with self._pool.connection() as conn:
                self._migrate(conn)
                if not atomic:
                    return work(conn)
                with conn.transaction():
                    return work(conn)  # our own constant SQL, values as parameters
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
        """Over every field (which answer, for what, where, until when, which generation),
        so no field can be changed, or a row moved to other content or repository."""
        message = json.dumps(
            [_SIGNED_AS, *(repr(v) if isinstance(v, float) else v for v in values)]
        )
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


def _slot(row: Row) -> Slot:
    return (row["key_id"], row["fingerprint"], row["kind"], row["repo"])


def _remembered(row: Row) -> Remembered:
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


def from_config(config: Config, data_dir: Path | None = None) -> TeamMemory | None:
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
    marks = TeamMarks(marks_path(data_dir or dirs.data_dir()))
    return TeamMemory(url, key, timeout_s=config.audit.lock_timeout_ms / 1000, marks=marks)
