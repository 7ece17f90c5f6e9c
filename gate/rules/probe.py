"""The filesystem facts a policy was built from, so that checking it is current costs a few
stats instead of rediscovering every rule layer on each request.

Finding the layers asks dozens of questions (is there a `.gate/` here, a `.git` there, a
managed settings file, a Claude Code settings file in this parent?). Each question goes
through this module, which, while recording, notes the path and what it was: its file type,
and for files and listed directories their mtime, size and inode. If every noted path still
answers the same, the same layers would be found with the same contents, so the policy built
then is the policy now. Nothing is time-bounded: any change is seen on the next request.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

Fact = tuple[int, int, int, int] | None  # (file type, mtime_ns, size, inode); None: absent
Facts = dict[tuple[str, bool], Fact]  # (path, listed) → what it was

_recording: ContextVar[Facts | None] = ContextVar("gate_rules_probe", default=None)
# What decides which paths are asked about at all.
_ENV = (
    "HOME",
    "GATE_MANAGED_RULES",
    "GATE_CLAUDE_MANAGED_DIR",
    "GATE_CONFIG_DIR",
    "XDG_CONFIG_HOME",
    "APPDATA",
)


def fact(path: str, *, listed: bool = False) -> Fact:
    """What `path` is now. A directory is only its type (a new file inside does not change
    which layers exist) unless `listed`: then its entries matter, and so does its mtime."""
    try:
        st = os.stat(path)
    except (OSError, ValueError):
        return None
    kind = stat.S_IFMT(st.st_mode)
    if kind == stat.S_IFDIR and not listed:
        return (kind, 0, 0, 0)
    return (kind, st.st_mtime_ns, st.st_size, st.st_ino)


def _note(path: Path, *, listed: bool = False) -> Fact:
    found = fact(str(path), listed=listed)
    facts = _recording.get()
    if facts is not None:
        facts[str(path), listed] = found
    return found


def exists(path: Path) -> bool:
    return _note(path) is not None


def is_file(path: Path) -> bool:
    found = _note(path)
    return found is not None and found[0] == stat.S_IFREG


def is_dir(path: Path) -> bool:
    found = _note(path)
    return found is not None and found[0] == stat.S_IFDIR


def listing(path: Path, pattern: str) -> list[Path]:
    """`path.glob(pattern)`, noting the directory so an added or removed entry is seen."""
    if not is_dir(path):
        return []
    _note(path, listed=True)
    return list(path.glob(pattern))


def version(path: Path) -> Fact:
    """A file's type, mtime, size and inode: a rewrite changes one of them."""
    return _note(path)


@contextmanager
def recording() -> Iterator[Facts]:
    """Note every question asked inside the block (this thread or task only)."""
    facts: Facts = {}
    token = _recording.set(facts)
    try:
        yield facts
    finally:
        _recording.reset(token)


def environment() -> tuple[str | None, ...]:
    return tuple(os.environ.get(name) for name in _ENV)


def unchanged(facts: Facts) -> bool:
    """Whether every noted path still answers as it did (a few stats)."""
    return all(fact(path, listed=listed) == was for (path, listed), was in facts.items())
