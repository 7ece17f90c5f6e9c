"""Which processes have a file open right now (Linux /proc), so a store its agent is
writing is left alone."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# A database's companions are part of it: an agent holding only its WAL is writing it.
COMPANIONS = ("", "-wal", "-shm", "-journal")


@dataclass(frozen=True, slots=True)
class Holder:
    pid: int
    name: str

    def __str__(self) -> str:
        return f"{self.name} (pid {self.pid})"


def holders(paths: Iterable[Path]) -> list[Holder]:
    """Other processes with any of `paths` (or a database companion of one) open."""
    wanted: set[str] = set()
    for p in paths:
        real = os.path.realpath(p)
        wanted.update(real + c for c in COMPANIONS)
    me = os.getpid()
    found: list[Holder] = []
    try:
        pids = [int(d) for d in os.listdir("/proc") if d.isdigit()]
    except OSError:
        return found  # not Linux: nothing can be said, and nothing is claimed
    for pid in pids:
        if pid == me:
            continue
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or not ours to look at
        for fd in fds:
            try:
                target = os.readlink(f"{fd_dir}/{fd}")
            except OSError:
                continue
            if target in wanted:
                found.append(Holder(pid, _name(pid)))
                break
    return found


def _name(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as f:
            return f.read().strip() or "?"
    except OSError:
        return "?"
