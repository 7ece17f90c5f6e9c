"""Which database the audit lives in: SQLite in the data dir (the default) or PostgreSQL
(`audit.url` in config.yaml, or GATE_AUDIT_URL), and what differs between them on the
store's write path: connections, migrations, errors and what the user can do about one."""

from __future__ import annotations

import importlib.util
import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from gate.audit import files, schema
from gate.config import AuditSettings, audit_url
from gate.errors import ConfigError

POOL_SIZE = 16  # connections per gate: one per thread that writes or reads the audit


@dataclass(kw_only=True)
class Engine:
    """SQLite at `path`, or PostgreSQL at `url` (then `path` is unused)."""

    path: Path
    settings: AuditSettings
    url: str | None = None
    _pool: Any = field(default=None, repr=False)
    _days: set[int] = field(default_factory=set, repr=False)  # partitions known to exist

    @property
    def postgres(self) -> bool:
        return self.url is not None

    @property
    def where(self) -> str:
        """The audit's location as messages name it (never a password)."""
        if self.url is None:
            return str(self.path)
        from gate.audit import pg

        return pg.redacted(self.url)

    @property
    def errors(self) -> tuple[type[Exception], ...]:
        if self.url is None:
            return (sqlite3.Error,)
        from gate.audit import pg

        return (pg.Error,)

    def connect(self, background: bool) -> sqlite3.Connection:
        if self.url is None:
            return files.connect(self.path, self.settings, background)
        from gate.audit import pg

        if self._pool is None:
            self._pool = pg.pool(self.url, POOL_SIZE, self.settings.lock_timeout_ms / 1000)
        # The seam in pg.py reads and writes as sqlite3 does for every query the store runs.
        return cast(sqlite3.Connection, pg.Connection(self._pool))

    def migrate(self, db: sqlite3.Connection) -> None:
        if self.url is None:
            schema.migrate(db)
            return
        from gate.audit import pg_schema

        pg_schema.migrate(cast(Any, db))

    def before_link(self, db: sqlite3.Connection, fields: dict[str, Any]) -> None:
        """Inside the write transaction, before the row is chained. On PostgreSQL a row goes
        to the partition of its ts's day (UTC), or of the row before it when that is later
        (another gate wrote since this one read its clock, or a clock is behind): partitions
        then follow ids, and dropping the oldest cuts the chain only at its start. The
        partition is made if missing. `day` is not in the chain: it says where a row is
        kept, not what was sent."""
        if self.url is None:
            return
        from gate.audit import pg_schema

        row = db.execute("SELECT day FROM requests ORDER BY id DESC LIMIT 1").fetchone()
        day = fields["day"] = max(pg_schema.day_of(fields["ts"]), row[0] if row else 0)
        if day not in self._days:
            pg_schema.ensure_partition(cast(Any, db), day)
            self._days.add(day)

    def hint(self, exc: Exception) -> str:
        if self.url is None:
            return files.hint(cast(sqlite3.Error, exc), self.settings)
        text = str(exc).lower()
        if "timeout" in text or "lock" in text:
            return (
                f"the audit database did not answer or another gate held the write lock"
                f" longer than audit.lock_timeout_ms ({self.settings.lock_timeout_ms} ms)"
            )
        if "connect" in text or "closed" in text or "terminat" in text:
            return "check that PostgreSQL is running and reachable at audit.url"
        if "disk" in text or "space" in text:
            return "free disk space on the database server, or lower audit.retention_days"
        return "see gate's log and PostgreSQL's; `gate audit verify` checks the audit"

    def forget_partition_cache(self) -> None:
        """Partitions were dropped (retention): look them up again before writing."""
        self._days.clear()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None


def engine_for(path: Path, settings: AuditSettings) -> Engine:
    """GATE_AUDIT_URL wins over audit.url; neither means SQLite at `path`."""
    env = os.environ.get("GATE_AUDIT_URL")
    url = audit_url(env, "GATE_AUDIT_URL") if env else settings.url
    if url is not None and importlib.util.find_spec("psycopg_pool") is None:
        raise ConfigError(
            "an audit on PostgreSQL needs psycopg and psycopg_pool",
            where="GATE_AUDIT_URL" if env else "audit.url",
            hint="pip install 'gate[postgres]'",
        )
    return Engine(path=path, settings=settings, url=url)
