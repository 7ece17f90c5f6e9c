"""The exit codes of every gate command, and the error an unreadable file or database is."""

from __future__ import annotations

import sys

from gate.errors import GateError, Unreachable

OK = 0  # done; nothing found
FOUND = 1  # findings (scan, search, history scan) or a refusal (a rule, a broken chain)
USAGE = 2  # the command line is wrong (click's own code)
UNREACHABLE = 3  # a file, directory or database cannot be read, or no gate answers


def unreadable(exc: BaseException) -> GateError | None:
    """The GateError a file or database failure reaching the CLI stands for (exit 3), or
    None for any other exception. A closed stdout (`gate log | head`) is not one."""
    sqlite3 = sys.modules.get("sqlite3")  # only loaded when the audit was opened
    if isinstance(exc, BrokenPipeError):
        return None
    if isinstance(exc, OSError):
        where = exc.filename if isinstance(exc.filename, str) else None
        return Unreachable(
            f"cannot read or reach it: {exc.strerror or exc}",
            where=where,
            hint="check that it exists and this user may read it (`gate paths` shows gate's dirs)",
        )
    if sqlite3 is not None and isinstance(exc, sqlite3.Error):
        return Unreachable(
            f"cannot read the audit: {exc}",
            hint="check `gate paths`; a damaged audit.db can be moved aside"
            " (a gate starting creates a new one)",
        )
    return None
