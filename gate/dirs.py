"""Where gate keeps its config and data, and how it creates owner-only files there."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from gate.errors import Unreachable

APP = "gate"


def config_dir() -> Path:
    """`$GATE_CONFIG_DIR`, else the platform's config dir."""
    if env := os.environ.get("GATE_CONFIG_DIR"):
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming")) / APP
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / APP


def data_dir() -> Path:
    """`$GATE_DATA_DIR`, else the platform's data dir."""
    if env := os.environ.get("GATE_DATA_DIR"):
        return Path(env).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP
    if sys.platform == "win32":
        return Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local")) / APP
    return Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / APP


def private_dir(path: Path) -> Path:
    """Create `path` (and parents) owner-only (0700) and return it. Raises GateError naming
    it when it cannot be (a read-only or full file system, a file in the way)."""
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        if path.stat().st_mode & 0o777 != 0o700:
            os.chmod(path, 0o700)
    except OSError as exc:
        raise Unreachable(
            f"gate cannot create or protect this directory ({exc.strerror})",
            where=str(path),
            hint="make it writable by this user (gate blocks every request while"
            " it cannot write its audit), or set GATE_DATA_DIR / GATE_CONFIG_DIR"
            " to another directory",
        ) from exc
    return path


def write_private(path: Path, data: bytes) -> None:
    """Replace `path` atomically (temp file, fsync, rename) with an owner-only (0600) file,
    in an owner-only dir."""
    private_dir(path.parent)
    with replace_private(path) as f:
        f.write(data)


@contextmanager
def replace_private(path: Path) -> Iterator[BinaryIO]:
    """A new owner-only (0600) file, renamed over `path` once the block completes (fsync
    first), removed if it fails: a reader never sees half a file. The dir must exist and
    keeps its mode (it may be the user's own, for a report or an export)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def owned_ancestors(here: Path) -> list[Path]:
    """`here` and its parents, up to (not into) a directory anyone may write in, such as
    /tmp: a `.gate/` or `.git` there is nobody's project (another user, or a run killed in
    /tmp, could have left it), and would make /tmp the root of every project under it."""
    out = []
    for d in (here, *here.parents):
        try:
            if d != here and d.stat().st_mode & stat.S_IWOTH:
                break
        except OSError:
            break
        out.append(d)
    return out
