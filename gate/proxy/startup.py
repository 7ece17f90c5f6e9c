"""Stop a gate whose start went wrong and say why, in place of mitmproxy's ErrorCheck."""

from __future__ import annotations

import asyncio
import logging
import os

from loguru import logger
from mitmproxy import ctx, log

from gate.errors import GateError


class StartFailed(GateError):
    """An error was logged while the gate started: an addon's hook raised, or a task failed."""


class StartupCheck:
    """mitmproxy's master looks up the addon named "errorcheck" and awaits its
    `shutdown_if_errored()` before bringing up the listeners, after, and after the running
    hooks. Its own ErrorCheck then ends the process (sys.exit(1)) printing only "Error
    logged during startup, exiting...": a listener that could not open looked like any
    other error, and `gate run`'s gate in a thread could only stop with SystemExit.

    This one raises instead, so the gate stops through its own error path: the OSError of
    a listener that could not open (the CLI says which address and what to do), else a
    StartFailed naming the first error logged.

    Fail closed: a gate whose start logged any error does not serve, whoever logged it. An
    addon whose hook raised is left half set up (mitmproxy logs the error and goes on),
    and a gate that screens with a part missing must not take requests."""

    name = "errorcheck"  # the name mitmproxy's master looks up

    def __init__(self) -> None:
        self._errors = _Errors()
        self._errors.install()

    async def shutdown_if_errored(self) -> None:
        await asyncio.sleep(0)  # records logged from callbacks already scheduled land first
        failed = [s.last_exception for s in ctx.master.addons.get("proxyserver").servers]
        records = self._errors.records
        if not any(failed) and not records:
            return
        self.finish()
        for exc in failed:
            if isinstance(exc, OSError):
                # mitmproxy's message names its own mode and suggests a --mode option gate
                # does not have: the error number says what happened, the caller where.
                raise OSError(exc.errno, os.strerror(exc.errno)) if exc.errno else exc
        for record in records:
            logger.error("while starting: {}", self._errors.format(record))
        first = records[0].getMessage() if records else str(next(e for e in failed if e))
        raise StartFailed(
            f"could not start: {first}",
            hint="gate's log has the details (above, or gate.log in the data dir);"
            " report the bug if it repeats",
        )

    def finish(self) -> None:
        """Stop collecting (the start is over); safe to call again."""
        self._errors.uninstall()


class _Errors(log.MitmLogHandler):
    """The ERROR records logged while it is installed, from any thread."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.setFormatter(log.MitmFormatter(colorize=False))
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
