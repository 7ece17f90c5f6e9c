"""The newest generation of each team answer this gate has seen, so a rolled-back row is refused.

A team answer's generation is a signed counter per (key, fingerprint, kind, repository).
The database can hand back an older signed row (saved before it was replaced or forgotten,
or left when the newer one is deleted); only a gate that remembers it saw a newer one can
tell. The marks live in `<data dir>/decisions/team-marks.json` (0600) and only ever rise:
a merge takes the larger generation per answer, under a file lock, so `gate decisions
forget` and a running gate never lower each other's.
"""

from __future__ import annotations

import fcntl
import json
import os
import threading
from pathlib import Path

from loguru import logger

from gate import dirs

FILE = "team-marks.json"
SCHEMA = 1

Slot = tuple[str, str, str, str]  # key id, fingerprint, kind, repository


def marks_path(data_dir: Path) -> Path:
    return data_dir / "decisions" / FILE


def _name(slot: Slot) -> str:
    return "\0".join(slot)


class TeamMarks:
    """Generations seen, per slot; kept in memory only when `path` is None."""

    def __init__(self, path: Path | None = None):
        self.path = path
        self._lock = threading.Lock()
        self._seen: dict[str, int] = self._read() if path else {}

    def get(self, slot: Slot) -> int:
        with self._lock:
            return self._seen.get(_name(slot), 0)

    def raise_to(self, seen: dict[Slot, int]) -> None:
        """Remember these generations where they are newer than what was known."""
        with self._lock:
            newer = {_name(s): g for s, g in seen.items() if g > self._seen.get(_name(s), 0)}
            if not newer:
                return
            self._seen.update(newer)
            if self.path is not None:
                self._save()

    def _read(self) -> dict[str, int]:
        assert self.path is not None
        try:
            payload = json.loads(self.path.read_bytes())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            # Then this gate is as one that never saw those rows: a rollback of them is
            # not noticed here. It is not a reason to send anything: answers are checked.
            logger.warning(
                "team answer marks {} unreadable ({}); starting without them",
                self.path,
                type(exc).__name__,
            )
            return {}
        if not isinstance(payload, dict) or payload.get("schemaVersion") != SCHEMA:
            logger.warning("team answer marks {} have another schema; ignored", self.path)
            return {}
        marks = payload.get("marks")
        if not isinstance(marks, dict):
            return {}
        return {k: v for k, v in marks.items() if isinstance(k, str) and type(v) is int}

    def _save(self) -> None:
        assert self.path is not None
        try:
            dirs.private_dir(self.path.parent)
            fd = os.open(self.path.with_suffix(".lock"), os.O_WRONLY | os.O_CREAT, 0o600)
            with os.fdopen(fd, "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)  # another process merges after us
                on_disk = self._read()
                for k, g in on_disk.items():
                    if g > self._seen.get(k, 0):
                        self._seen[k] = g
                payload = {"schemaVersion": SCHEMA, "marks": self._seen}
                dirs.write_private(self.path, json.dumps(payload).encode())
        except OSError as exc:
            logger.error(
                "team answer marks {} not written ({}): a restart forgets them",
                self.path,
                type(exc).__name__,
            )
