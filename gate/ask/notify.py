"""Desktop notifications for a parked question: `notify-send` on Linux, `osascript` on macOS.

Best effort: started without blocking the request, never raising; where neither program is
on PATH nothing happens (the terminal, `gate watch` and the approval page still ask).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading

from loguru import logger

BODY_CHARS = 300
WAIT_SECONDS = 10.0
# The values arrive as AppleScript arguments, never spliced into the script's source.
_APPLESCRIPT = (
    "on run argv",
    "display notification (item 2 of argv) with title (item 1 of argv)",
    "end run",
)


def desktop(title: str, body: str) -> None:
    """Show a desktop notification where one is available; never raises."""
    try:
        argv = _command(title, body[:BODY_CHARS])
        if argv is None:
            return
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        threading.Thread(target=_reap, args=(proc,), daemon=True, name="gate-notify").start()
    except Exception as exc:  # a notification is a courtesy; the question is still parked
        logger.debug("desktop notification failed ({})", type(exc).__name__)


def _command(title: str, body: str) -> list[str] | None:
    if sys.platform == "darwin" and (osa := shutil.which("osascript")):
        return [osa, *(a for line in _APPLESCRIPT for a in ("-e", line)), title, body]
    if exe := shutil.which("notify-send"):
        return [exe, "--app-name=gate", "--", title, body]
    return None


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """Wait for the notifier so it leaves no zombie; kill one that hangs."""
    try:
        proc.wait(timeout=WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
