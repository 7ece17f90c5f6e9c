"""The terminal notices of `gate run`, checked in a real pty: the bell and the window title
in a terminal, nothing drawn over the agent's screen; one plain line when not a terminal."""

from __future__ import annotations

import io
import os
import pty
import time
from typing import Any

from gate.ask.terminal import Notices


def question(qid: str, run: str, kind: str = "secret\x1b[2J") -> dict[str, Any]:
    return {
        "id": qid,
        "kind": "send-secret",
        "default": "redact",
        "expires": time.time() + 60,
        "request": {"run_id": run},
        "findings": [{"kind": kind}],
    }


def test_in_a_terminal_the_bell_and_the_title_and_nothing_else() -> None:
    master, slave = pty.openpty()
    stream = os.fdopen(slave, "w")
    open_questions = [question("q1", "run-a"), question("q2", "other-run")]
    notices = Notices("run-a", lambda: open_questions, stream, env={})
    notices.check()
    notices.check()  # told once per question
    open_questions.clear()
    notices.check()
    stream.close()
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    text = seen.decode()
    assert text.count("\a") == 3  # the bell once, and each title ends with BEL
    assert "\x1b]0;gate: question q1 waiting\a" in text and "q2" not in text
    assert "\x1b]0;gate: answered\a" in text
    assert "\n" not in text and "\x1b[2J" not in text  # no line, no screen control


def test_not_a_terminal_one_line_per_question_and_hostile_text_made_inert() -> None:
    stream = io.StringIO()
    notices = Notices("run-a", lambda: [question("q1", "run-a")], stream, env={})
    notices.check()
    notices.check()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and "question q1" in lines[0] and "\x1b" not in lines[0]
    assert "gate approve q1" in lines[0]


def test_a_loosen_rule_question_is_told_in_every_runs_terminal() -> None:
    stream = io.StringIO()
    loosen = {
        "id": "q9",
        "kind": "loosen-rule",
        "default": "block",
        "expires": None,
        "request": {"file": ".gate/rules.yaml\x1b[2J"},
        "findings": [{"kind": "loosen-rule", "rule": "Read(./.env)"}],
    }
    notices = Notices("run-a", lambda: [loosen], stream, env={})
    notices.check()
    [line] = stream.getvalue().splitlines()
    assert "question q9 (.gate/rules.yaml[2J changed and would loosen Read(./.env))" in line
    assert "`gate approve q9` lets the change take effect" in line and "\x1b" not in line
    assert " in 0 s" not in line
