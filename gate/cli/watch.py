"""`gate watch`: a live terminal view of requests as they pass and of pending questions,
answered with single keys."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import sqlite3
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from gate import dirs
from gate.ask.client import ControlClient
from gate.ask.questions import DEFAULT_SCOPE
from gate.audit.store import AuditStore
from gate.cli.common import echo_json, json_option
from gate.cli.watchview import SCOPE_KEYS, Snapshot, View, render
from gate.errors import GateError, Unreachable

ANSWER_KEYS = {"a": "approve", "r": "redact", "b": "block"}
# Arrow keys arrive as escape sequences; everything else we read is one character.
_ARROWS = {"\x1b[A": "up", "\x1b[B": "down", "\x1bOA": "up", "\x1bOB": "down"}


class Audit:
    """The data dir's audit, opened once it exists (never created just to look at it)
    and kept open across refreshes."""

    def __init__(self, data_dir: Path):
        self.path = data_dir / "audit.db"
        self.store: AuditStore | None = None

    def recent(self, limit: int) -> list[dict[str, Any]]:
        try:
            if self.store is None and self.path.exists():
                self.store = AuditStore(self.path, reader=True)
            return [_meta(r) for r in self.store.rows(limit, body=False)] if self.store else []
        except sqlite3.Error as exc:
            raise Unreachable(
                f"cannot read the audit: {exc}",
                where=str(self.path),
                hint="`gate log` shows the same error; check the file",
            ) from exc

    def close(self) -> None:
        if self.store is not None:
            self.store.close()


def snapshot(data_dir: Path, audit: Audit, limit: int) -> Snapshot:
    """Recent requests from the audit (metadata only) and the running gate's questions."""
    requests = audit.recent(limit)
    try:
        return Snapshot(requests, ControlClient.find(data_dir).pending(), None)
    except GateError as exc:
        return Snapshot(requests, [], exc.message)


def _meta(row: dict[str, Any]) -> dict[str, Any]:
    keep = (
        "id",
        "ts",
        "agent",
        "upstream",
        "path",
        "model",
        "verdict",
        "status",
        "withheld",
        "request_bytes",
        "error",
    )
    return {k: row.get(k) for k in keep}


@click.command("watch")
@click.option("--once", is_flag=True, help="Print one frame and exit (for scripts).")
@click.option(
    "--limit",
    type=click.IntRange(1, 500),
    default=15,
    show_default=True,
    help="How many recent requests to show.",
)
@click.option(
    "--interval",
    type=click.FloatRange(0.1, 60),
    default=1.0,
    show_default=True,
    help="Seconds between refreshes.",
)
@json_option
def watch_cmd(once: bool, limit: int, interval: float, as_json: bool) -> None:
    """Watch requests pass and answer pending questions with single keys.

    Keys: up/down (or j/k) select a question; a approve, r redact, b block (this time
    only); A, R, B answer and remember, then s session, p project, w always (Esc cancels);
    q quits. `--once` prints one frame; `--once --json` one JSON object.
    """
    data_dir = dirs.data_dir()
    live = not (once or as_json)
    if live and not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise click.UsageError("gate watch needs a terminal; use --once for one frame")
    audit = Audit(data_dir)
    try:
        if live:
            _live(data_dir, audit, limit, interval)
            return
        snap = snapshot(data_dir, audit, limit)
    finally:
        audit.close()
    if as_json:
        echo_json({"requests": snap.requests, "pending": snap.pending, "gate": snap.note})
    else:
        view = View(data_dir=str(data_dir))
        click.echo("\n".join(render(snap, view, width=None, color=False)))


def _live(data_dir: Path, audit: Audit, limit: int, interval: float) -> None:
    view = View(data_dir=str(data_dir))
    fd = sys.stdin.fileno()
    color = "NO_COLOR" not in os.environ
    with _terminal(fd), contextlib.suppress(KeyboardInterrupt):  # Ctrl-C quits, like q
        while True:
            snap = snapshot(data_dir, audit, limit)
            view.follow(snap.pending)
            cols, rows = shutil.get_terminal_size()
            lines = render(snap, view, width=cols, color=color)[:rows]
            # Overwrite in place (clear each line's rest, then below): no flicker.
            sys.stdout.write("\x1b[H" + "\x1b[K\r\n".join(lines) + "\x1b[K\x1b[J")
            sys.stdout.flush()
            deadline = time.monotonic() + interval
            while (left := deadline - time.monotonic()) > 0:
                if not select.select([fd], [], [], left)[0]:
                    break
                for key in keys(os.read(fd, 64).decode("utf-8", "replace")):
                    if key in ("q", "\x03"):
                        return
                    press(key, view, snap.pending, data_dir)
                break  # redraw right after a key


def keys(data: str) -> Iterator[str]:
    """Split what one read returned into keys (arrow sequences stay whole)."""
    i = 0
    while i < len(data):
        seq = next((s for s in _ARROWS if data.startswith(s, i)), None)
        yield _ARROWS[seq] if seq else data[i]
        i += len(seq) if seq else 1


def press(key: str, view: View, pending: list[dict[str, Any]], data_dir: Path) -> None:
    """Apply one key: move the selection, or answer the selected question."""
    if view.choosing is not None:  # the second key of A/R/B: the remember scope
        answer, view.choosing = view.choosing, None
        if key in SCOPE_KEYS:
            _answer(view, pending, data_dir, answer, SCOPE_KEYS[key])
        else:
            view.message = "cancelled"
        return
    if key in ("up", "k", "down", "j"):
        view.move(pending, -1 if key in ("up", "k") else 1)
    elif key in ANSWER_KEYS:
        _answer(view, pending, data_dir, ANSWER_KEYS[key], DEFAULT_SCOPE)
    elif key.lower() in ANSWER_KEYS and view.selected_in(pending):
        view.choosing = ANSWER_KEYS[key.lower()]
        view.message = (
            f"{view.choosing} and remember for: s session, p project, w always (Esc cancels)"
        )


def _answer(
    view: View, pending: list[dict[str, Any]], data_dir: Path, answer: str, remember: str
) -> None:
    qid = view.selected_in(pending)
    if qid is None:
        view.message = "no question selected"
        return
    try:
        reply = ControlClient.find(data_dir).answer(qid, answer, remember)
    except GateError as exc:
        view.message = exc.message
        return
    remember = str(reply.get("remember") or remember)  # a loosen-rule answer is once only
    view.message = f"{qid}: {answer}" + ("" if remember == "once" else f", remembered ({remember})")


@contextlib.contextmanager
def _terminal(fd: int) -> Iterator[None]:
    """Keys without Enter, no echo, the alternate screen; all restored on exit."""
    import termios  # POSIX only: imported here so `gate` itself loads everywhere
    import tty

    saved = termios.tcgetattr(fd)
    tty.setcbreak(fd)
    sys.stdout.write("\x1b[?1049h\x1b[?25l")
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)
        sys.stdout.write("\x1b[?25h\x1b[?1049l")
        sys.stdout.flush()


COMMANDS = (watch_cmd,)
