"""memory.json: the decision memory's persisted answers (project and always scopes).

Owner-only, replaced atomically under a file lock, with a schemaVersion; re-read when
another process replaced it; an unreadable file is moved aside, a newer one refused.
Entries hold a keyed fingerprint of the content, never the content.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import orjson
from loguru import logger

from gate import dirs
from gate.ask.choices import ANSWERS, Scope
from gate.errors import StateError

SCHEMA_VERSION = 1
FILE = "memory.json"
__all__ = ["ANSWERS", "PERSISTED", "MemoryFile", "Remembered", "Scope", "memory_path"]

PERSISTED = (Scope.PROJECT, Scope.ALWAYS)


@dataclass(frozen=True, slots=True, kw_only=True)
class Remembered:
    id: str
    fingerprint: str
    kind: str
    answer: str
    scope: str
    session: str | None
    project: str | None
    created: float
    expires: float
    question_id: str = ""

    def matches(
        self, fingerprint: str, kind: str, session: str | None, project: str | None
    ) -> bool:
        if self.fingerprint != fingerprint or self.kind != kind:
            return False
        if self.scope == Scope.SESSION:
            return self.session == session
        if self.scope == Scope.PROJECT:
            return project is not None and self.project == project
        return True


_FIELDS = tuple(f.name for f in fields(Remembered))


def memory_path(data_dir: Path) -> Path:
    return data_dir / "decisions" / FILE


class MemoryFile:
    """The persisted entries in memory.json, re-read when another process changed it
    (`gate decisions forget` while a gate runs). Callers in one process hold a lock;
    `update` also takes a file lock, so two processes never lose each other's writes."""

    def __init__(self, path: Path):
        self.path = path
        self._seen: tuple[int, int, int] | None = None
        self._racy = False
        self._by_content: dict[tuple[str, str], list[Remembered]] = {}

    def entries(self) -> list[Remembered]:
        """Unexpired entries, re-read if the file changed since last read."""
        self._refresh()
        now = time.time()
        return [e for group in self._by_content.values() for e in group if e.expires > now]

    def matching(self, fingerprint: str, kind: str) -> list[Remembered]:
        """Unexpired entries for this content: a dict lookup, not a scan."""
        self._refresh()
        now = time.time()
        return [e for e in self._by_content.get((fingerprint, kind), ()) if e.expires > now]

    def update(self, change: Callable[[list[Remembered]], list[Remembered]]) -> None:
        """Read the current file, apply `change`, write the result atomically."""
        with _file_lock(self.path):
            # Always re-read under the lock: the (inode, mtime, size) signature can repeat
            # (a freed inode reused within one clock tick, the same number of entries), and
            # trusting it here lost another process's answer.
            now = time.time()
            current = [e for e in _read(self.path) if e.expires > now]
            kept = [e for e in change(current) if e.expires > now]
            payload = {
                "schemaVersion": SCHEMA_VERSION,
                "entries": [{f: getattr(e, f) for f in _FIELDS} for e in kept],
            }
            # One entry per line: readable, and still one write.
            dirs.write_private(self.path, orjson.dumps(payload).replace(b'},{"id"', b'},\n{"id"'))
            self._index(kept, _signature(self.path))

    def _refresh(self) -> None:
        sig = _signature(self.path)  # before the read: a change after it is seen next time
        if sig is None or sig != self._seen or self._racy:  # None: no file yet
            self._index(_read(self.path), sig)

    def _index(self, entries: list[Remembered], sig: tuple[int, int, int] | None) -> None:
        self._by_content = {}
        for e in entries:
            self._by_content.setdefault((e.fingerprint, e.kind), []).append(e)
        self._seen = sig
        # Racy like git's index: a file replaced within one clock tick can repeat (inode,
        # mtime, size), so a signature is trusted only once read a second after its mtime.
        self._racy = sig is not None and time.time_ns() - sig[1] < 1_000_000_000


def forget_persisted(file: MemoryFile, entry_id: str) -> bool:
    """Drop a persisted entry by id; False if there is none."""
    found = False

    def drop(entries: list[Remembered]) -> list[Remembered]:
        nonlocal found
        left = [e for e in entries if e.id != entry_id]
        found = len(left) != len(entries)
        return left

    file.update(drop)
    return found


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An advisory lock beside `path` (POSIX flock; elsewhere the process lock only)."""
    try:
        import fcntl
    except ImportError:  # Windows: one gate per data dir is the supported case there
        yield
        return
    dirs.private_dir(path.parent.parent)
    dirs.private_dir(path.parent)
    fd = os.open(path.with_name("memory.lock"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _read(path: Path) -> list[Remembered]:
    """Entries in memory.json; an unreadable file is moved aside (warning names both
    paths), a newer schemaVersion raises StateError and stays untouched."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return []
    try:
        data = orjson.loads(raw)
        version = data["schemaVersion"]
        if isinstance(version, int) and version > SCHEMA_VERSION:
            raise StateError(
                f"schemaVersion {version} is newer than this gate reads ({SCHEMA_VERSION})",
                where=str(path),
                hint="upgrade gate, or move the file away to start afresh",
            )
        if version != SCHEMA_VERSION:
            raise ValueError(f"schemaVersion {version!r}")
        now = time.time()
        return [e for e in map(_entry, data["entries"]) if e.expires > now]
    except (ValueError, KeyError, TypeError) as exc:
        aside = path.with_name(f"{FILE}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        with contextlib.suppress(FileNotFoundError):  # another gate moved it first
            os.replace(path, aside)
        logger.warning(
            "{} is unreadable ({}); moved it to {} and started an empty decision memory",
            path,
            type(exc).__name__,
            aside,
        )
        return []


def _entry(item: dict[str, Any]) -> Remembered:
    entry = Remembered(**item)
    if entry.answer not in ANSWERS or entry.scope not in PERSISTED:
        raise ValueError(f"entry {entry.id!r}: answer {entry.answer!r}, scope {entry.scope!r}")
    return entry
