"""Runs a `gate` command in a real pseudo-terminal and reads what it draws."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
import time


class Term:
    """`gate ARGS` on a pty of `cols` x `rows`; expect() waits for text in its output."""

    def __init__(self, *args: str, cols: int = 200, rows: int = 60):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
        # A new session whose controlling terminal is the pty, as in a real terminal:
        # Ctrl-C there is a SIGINT to gate, not a character.
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "gate", *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
            preexec_fn=_take_terminal,
        )
        os.close(slave)
        self.out = b""

    def expect(self, text: str, *, after: int = 0, timeout: float = 30.0) -> int:
        """Wait until `text` is drawn past offset `after`; the offset just past it."""
        deadline = time.monotonic() + timeout
        while (at := self.out.find(text.encode(), after)) < 0:
            left = deadline - time.monotonic()
            assert left > 0, f"{text!r} never drawn; last output:\n{self.tail()}"
            self._read(left)
        return at + len(text)

    def press(self, keys: str) -> int:
        """Type keys; the output offset when they were typed."""
        os.write(self.master, keys.encode())
        return len(self.out)

    def wait(self, timeout: float = 10.0) -> int:
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            self._read(0.05)
        self._read(0.05)
        return self.proc.wait(timeout=1)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)

    def tail(self) -> str:
        return self.out[-3000:].decode("utf-8", "replace")

    def _read(self, timeout: float) -> None:
        if select.select([self.master], [], [], timeout)[0]:
            try:
                self.out += os.read(self.master, 65536)
            except OSError:  # the child closed the pty
                time.sleep(0.01)


def _take_terminal() -> None:
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)
