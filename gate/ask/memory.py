"""Decision memory: answers a person asked gate to remember, keyed by a keyed hash of the
content, so the history an agent resends every turn is decided without asking again.

Only a fingerprint (HMAC-SHA256 under the install key) of a value is ever held, never the
value. "session" answers live in this process only; "project" and "always" answers are
persisted in `<data>/decisions/memory.json` (gate/ask/memory_file.py).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections.abc import Callable
from pathlib import Path

from loguru import logger

from gate.ask.memory_file import (
    ANSWERS,
    MemoryFile,
    Remembered,
    Scope,
    forget_persisted,
    memory_path,
)
from gate.errors import StateError

__all__ = ["DecisionMemory", "Remembered", "Scope", "memory_path"]

# When several entries match, the narrowest scope wins: a "block for this project"
# overrides an older "always approve".
_PRECEDENCE = {Scope.SESSION: 0, Scope.PROJECT: 1, Scope.ALWAYS: 2}


class DecisionMemory:
    """Remembered answers by fingerprint, kind and scope. Thread-safe.

    Lookups and writes after start never raise for a bad file: a memory gate cannot read
    decides nothing, and the person is asked (fail closed). The constructor raises
    StateError for a memory.json written by a newer gate, leaving it untouched."""

    def __init__(self, data_dir: Path, key: bytes, *, ttl_days: float = 90):
        if not key:
            raise ValueError("decision memory needs the install key")
        self._key = key
        self._ttl = ttl_days * 86400
        self._file = MemoryFile(memory_path(data_dir))
        self._session: list[Remembered] = []
        self._lock = threading.Lock()
        with self._lock:
            self._file.entries()  # refuse a newer file now, not on the first question

    def fingerprint(self, value: str, kind: str) -> str:
        """Keyed HMAC-SHA256 hex of kind and value: the only form a value is remembered in."""
        message = kind.encode() + b"\0" + value.encode("utf-8", "surrogatepass")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def lookup(
        self, fingerprint: str, kind: str, *, session: str | None, project: str | None
    ) -> Remembered | None:
        """The remembered answer for this content here, narrowest scope first, else None."""
        with self._lock:
            found = [
                e
                for e in self._live(lambda f: f.matching(fingerprint, kind))
                if e.matches(fingerprint, kind, session, project)
            ]
        found.sort(key=lambda e: (_PRECEDENCE[Scope(e.scope)], -e.created))
        return found[0] if found else None

    def remember(
        self,
        fingerprint: str,
        kind: str,
        answer: str,
        scope: str,
        *,
        session: str | None,
        project: str | None,
        question_id: str,
    ) -> Remembered | None:
        """Store an answer for `scope`; None for "once", or when it cannot be stored
        (then the person is simply asked again next time)."""
        if answer not in ANSWERS:
            raise ValueError(f"answer must be one of {sorted(ANSWERS)}, not {answer!r}")
        scope = Scope(scope)
        if scope is Scope.TEAM:
            raise ValueError("the team's answers are kept by the team memory (memory_team.py)")
        if scope == Scope.ONCE:
            return None
        if scope == Scope.PROJECT and project is None:
            logger.warning(
                "decision {} not remembered: scope project needs a project root", question_id
            )
            return None
        now = time.time()
        entry = Remembered(
            id=secrets.token_hex(5),
            fingerprint=fingerprint,
            kind=kind,
            answer=answer,
            scope=scope.value,
            session=session if scope == Scope.SESSION else None,
            project=project if scope == Scope.PROJECT else None,
            created=now,
            expires=now + self._ttl,
            question_id=question_id,
        )
        with self._lock:
            if scope == Scope.SESSION:
                self._session = [*_without(self._session, entry), entry]
                return entry
            try:
                self._file.update(lambda entries: [*_without(entries, entry), entry])
            except (OSError, StateError) as exc:
                logger.error("decision {} not remembered: {}", question_id, exc)
                return None
        return entry

    def entries(self) -> list[Remembered]:
        with self._lock:
            return sorted(self._live(MemoryFile.entries), key=lambda e: e.created)

    def forget(self, entry_id: str) -> bool:
        """Drop one entry by id; False if there is none."""
        with self._lock:
            before = len(self._session)
            self._session = [e for e in self._session if e.id != entry_id]
            if len(self._session) != before:
                return True
            return forget_persisted(self._file, entry_id)

    def _live(self, persisted_of: Callable[[MemoryFile], list[Remembered]]) -> list[Remembered]:
        """Unexpired session entries and `persisted_of(file)`; a file gate cannot use
        counts as empty (the person is asked)."""
        now = time.time()
        self._session = [e for e in self._session if e.expires > now]
        try:
            persisted = persisted_of(self._file)
        except (StateError, OSError) as exc:
            logger.error("decision memory unusable, asking instead: {}", exc)
            persisted = []
        return [*self._session, *persisted]


def _without(entries: list[Remembered], new: Remembered) -> list[Remembered]:
    """Entries minus any the new one replaces (same content, kind, scope and place)."""
    return [
        e
        for e in entries
        if (e.fingerprint, e.kind, e.scope, e.session, e.project)
        != (new.fingerprint, new.kind, new.scope, new.session, new.project)
    ]
