"""The one place loguru sinks are configured."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from loguru import logger

from gate.errors import Unreachable

FORMAT = "{time:HH:mm:ss} gate {level: <7} {message}"


def configure(*, level: str = "INFO", file: Path | None = None, stderr: bool = True) -> None:
    """Send gate's log to stderr and/or a file. Messages never carry bodies or secrets.
    `GATE_LOG_LEVEL` (DEBUG, INFO, WARNING...) overrides the level."""
    level = os.environ.get("GATE_LOG_LEVEL", "").upper() or level
    logger.remove()
    if stderr:
        logger.add(sys.stderr, level=level, format=FORMAT, diagnose=False, backtrace=False)
    if file is not None:
        try:
            file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            file.touch(mode=0o600, exist_ok=True)
        except OSError as exc:  # a read-only or full data dir: say so before anything else
            raise Unreachable(
                f"gate cannot write its log ({exc.strerror})",
                where=str(file),
                hint="make the data dir writable by this user, or set"
                " GATE_DATA_DIR to another directory",
            ) from exc
        logger.add(
            file,
            level=level,
            format="{time} {level} {message}",
            diagnose=False,
            backtrace=False,
            rotation="10 MB",
            retention=3,
            opener=_private_opener,
        )


def _private_opener(path: str, flags: int) -> int:
    """Log files are owner-only from the moment they exist, rotated ones included."""
    return os.open(path, flags, 0o600)
