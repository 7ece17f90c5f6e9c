"""What the audit's helpers (retention, tunnels, the background worker) need of a store."""

from __future__ import annotations

import sqlite3
from typing import Protocol

from gate.config import AuditSettings


class Database(Protocol):
    """Which database a store writes to (engine.py's Engine)."""

    @property
    def postgres(self) -> bool: ...


class Connected(Protocol):
    """An audit store as its helpers see it: its database, settings and this thread's
    connection (the store in store.py; helpers never import it, it imports them)."""

    @property
    def engine(self) -> Database: ...

    @property
    def settings(self) -> AuditSettings: ...

    def conn(self) -> sqlite3.Connection: ...
