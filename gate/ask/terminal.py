"""Telling the person in the agent's own terminal that gate waits for them, without breaking
the agent's screen: a line on stderr when it is not a terminal; else the bell and the window
title (and tmux's status line inside tmux), which draw nothing over the agent's screen."""

from __future__ import annotations

import os
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any, TextIO

from loguru import logger

from gate.ask.questions import LOOSEN_RULE

POLL_SECONDS = 1.0
# What a question says (agent, paths, kinds) must not drive the terminal.
_UNSAFE = {c: None for c in (*range(32), 0x7F, *range(0x80, 0xA0))}


class Notices:
    """Polls the gate's open questions for one run's and tells the terminal about each new
    one once, and when none is left. `pending` is the control API call (raises when no gate
    answers: then nothing is said)."""

    def __init__(
        self,
        run_id: str,
        pending: Callable[[], list[dict[str, Any]]],
        stream: TextIO,
        env: dict[str, str] | None = None,
    ):
        self.run_id = run_id
        self.pending = pending
        self.stream = stream
        self.env = os.environ if env is None else env
        self.told: set[str] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True, name="gate-notices")

    def start(self) -> Notices:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                self.check()
            except Exception as exc:  # a courtesy: the question is still on the page
                logger.debug("terminal notice skipped ({})", type(exc).__name__)

    def check(self) -> None:
        # A run's own questions, and any about a rule file loosened while gate runs (the
        # agent of this run may have edited it; its owner answers it).
        mine = [
            q
            for q in self.pending()
            if (q.get("request") or {}).get("run_id") == self.run_id or q.get("kind") == LOOSEN_RULE
        ]
        new = [q for q in mine if q["id"] not in self.told]
        for q in new:
            self.told.add(q["id"])
            self.tell(q)
        if not mine and self.told and self.interactive:
            self._title("gate: answered")

    @property
    def interactive(self) -> bool:
        return self.stream.isatty()

    def tell(self, q: dict[str, Any]) -> None:
        kinds = ", ".join(sorted({str(f.get("kind")) for f in q.get("findings") or []}))
        left = max(0, int(float(q.get("expires") or 0) - time.time()))
        if q.get("kind") == LOOSEN_RULE:
            rules = ", ".join(str(f.get("rule")) for f in q.get("findings") or [])
            text = (
                f"gate: waiting for you: question {q['id']} ({q['request'].get('file')}"
                f" changed and would loosen {rules}); `gate approve {q['id']}` lets the"
                f" change take effect, `gate block {q['id']}` keeps the rules (in force"
                " until answered)"
            ).translate(_UNSAFE)
        else:
            text = (
                f"gate: waiting for you: question {q['id']} ({kinds or q.get('kind')});"
                f" answer with `gate watch`, `gate approve {q['id']}` or the page"
                f" ({q.get('default', 'block')} in {left} s)"
            ).translate(_UNSAFE)
        if not self.interactive:
            self.stream.write(text + "\n")
            self.stream.flush()
            return
        self.stream.write("\a")
        self._title(f"gate: question {q['id']} waiting")
        if self.env.get("TMUX") and (tmux := shutil.which("tmux")):
            subprocess.run(
                [tmux, "display-message", "-d", "8000", text],
                check=False,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=5,
            )

    def _title(self, title: str) -> None:
        self.stream.write(f"\x1b]0;{title.translate(_UNSAFE)}\x07")
        self.stream.flush()
