"""What every agent's store reader provides, and the state it keeps while a store is read."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gate.history.item import Item
from gate.history.model import Agent, Place, Store, Where


@dataclass(frozen=True, slots=True)
class Env:
    """Where to look: the home directory, the environment (an agent's *_HOME variables),
    and project directories for the agents that keep history inside each project."""

    home: Path
    environ: Mapping[str, str]
    projects: tuple[Path, ...] = ()

    def dir(self, var: str | None, *default: str) -> Path:
        value = self.environ.get(var) if var else None
        return Path(value).expanduser() if value else self.home.joinpath(*default)


@dataclass(slots=True, kw_only=True)
class Notes:
    """What a reader learns from a store as it goes: tool names by call id, the session."""

    calls: dict[str, str] = field(default_factory=dict)
    roles: dict[str, str] = field(default_factory=dict)  # message id → role
    session: str | None = None
    project: str | None = None
    title: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Reader:
    agent: Agent
    stores: Callable[[Env], Iterator[Store]]
    describe: Callable[[Item, Notes], Where]
    note: Callable[[Any, Notes], None] = lambda doc, notes: None
    markers: tuple[str, ...] = ()  # raw-line substrings that make a line worth noting


def when(value: Any) -> float | None:
    """Seconds since the epoch from an ISO string, or seconds or milliseconds."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value) / 1000 if value > 1e11 else float(value)
    if isinstance(value, str) and value:
        try:
            stamp = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=dt.UTC)
        return stamp.timestamp()
    return None


def where(
    item: Item,
    notes: Notes,
    place: Place,
    tool: str | None = None,
    ts: float | None = None,
    **known: str | None,
) -> Where:
    """A Where from what the store, the notes and the line itself say, most specific first."""
    store = item.store
    return Where(
        at=item.at(),
        place=place,
        tool=tool,
        ts=ts,
        session=known.get("session") or notes.session or store.session,
        project=known.get("project") or notes.project or store.project,
        title=known.get("title") or notes.title or store.title,
    )


def files(top: Path, pattern: str) -> Iterator[Path]:
    """Regular files under `top` matching a glob, sorted; nothing when `top` is absent."""
    if top.is_dir():
        yield from sorted(p for p in top.glob(pattern) if p.is_file() and not p.is_symlink())


def sqlite_files(top: Path, pattern: str) -> Iterator[Path]:
    """Databases under `top` (their -wal and -shm companions are part of each)."""
    for p in files(top, pattern):
        if not p.name.endswith(("-wal", "-shm", "-journal")):
            yield p
