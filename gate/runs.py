"""Runs started by `gate run`: a run id in the base URL tells the gate the project root,
anchored when the run starts."""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from gate import dirs
from gate.rules.layers import find_root

SCHEMA_VERSION = 2  # 2: `root`, the project root anchored at the start
_ID = re.compile(r"^[0-9a-f]{16}$")


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    id: str
    cwd: str
    agent: str
    pid: int
    started: float
    root: str  # the project root its rules come from, found once, when the run started


def runs_dir(data_dir: Path) -> Path:
    return data_dir / "runs"


def register(data_dir: Path, cwd: str, agent: str, root: str | None = None) -> Run:
    """A new run in `cwd`; its project root is `root`, or found from `cwd` now (never
    again: what the agent creates later does not move it)."""
    run = Run(
        id=secrets.token_hex(8),
        cwd=cwd,
        agent=agent,
        pid=os.getpid(),
        started=time.time(),
        root=root if root is not None else find_root(cwd),
    )
    payload = {"schemaVersion": SCHEMA_VERSION, **asdict(run)}
    dirs.write_private(runs_dir(data_dir) / f"{run.id}.json", json.dumps(payload).encode())
    return run


def unregister(data_dir: Path, run: Run) -> None:
    (runs_dir(data_dir) / f"{run.id}.json").unlink(missing_ok=True)


def lookup(data_dir: Path, run_id: str) -> Run | None:
    """The run with this id, or None when the id is malformed or unknown."""
    if not _ID.match(run_id):
        return None
    try:
        data = json.loads((runs_dir(data_dir) / f"{run_id}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if data.get("schemaVersion") != SCHEMA_VERSION:
        return None
    return Run(
        id=data["id"],
        cwd=data["cwd"],
        agent=data["agent"],
        pid=int(data["pid"]),
        started=float(data["started"]),
        root=data["root"],
    )


@dataclass
class Known:
    """The runs one gate has seen, as they were when it first read them: a run file edited
    later (by an agent that is not locked and runs as you) cannot move its run's root, its
    agent or its pid. A run whose file is gone is gone (its `gate run` ended)."""

    data_dir: Path
    _seen: dict[str, Run] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def lookup(self, run_id: str) -> Run | None:
        if not _ID.match(run_id):
            return None
        if not (runs_dir(self.data_dir) / f"{run_id}.json").exists():
            with self._lock:
                self._seen.pop(run_id, None)
            return None
        with self._lock:
            if (hit := self._seen.get(run_id)) is not None:
                return hit
        run = lookup(self.data_dir, run_id)
        if run is not None:
            with self._lock:
                run = self._seen.setdefault(run_id, run)
        return run
