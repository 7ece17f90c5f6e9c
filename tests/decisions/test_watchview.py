"""`gate watch` frames and keys, from plain data (no terminal needed)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from gate.cli.watch import keys, press
from gate.cli.watchview import Snapshot, View, render


def question(qid: str, **extra: Any) -> dict[str, Any]:
    return {
        "id": qid,
        "kind": "send-secret",
        "created": time.time(),
        "expires": time.time() + 90,
        "default": "redact",
        "request": {
            "agent": "claude-code",
            "upstream": "anthropic",
            "path": "/v1/messages?x=1",
            "model": "claude-x",
        },
        "findings": [
            {
                "kind": "github-token",
                "rule": "secrets.github",
                "where": "tool_result",
                "tool": "Bash",
                "file": None,
                "preview": "ghp_********abcd",
                "context": "export A=1\nGITHUB_TOKEN=ghp_********abcd\nB\nC\nD",
            }
        ],
        **extra,
    }


REQUEST = {
    "id": 7,
    "ts": time.time(),
    "agent": "codex",
    "upstream": "openai",
    "path": "/v1/responses",
    "model": "gpt-x",
    "verdict": "modified",
    "status": 200,
    "withheld": [{"kind": "secret"}],
    "request_bytes": 1234,
}


def test_a_frame_shows_questions_findings_and_requests() -> None:
    view = View(data_dir="/d")
    snap = Snapshot([REQUEST], [question("qa"), question("qb", proposed="block")], None)
    view.follow(snap.pending)
    text = "\n".join(render(snap, view, width=None, color=False))
    assert "PENDING QUESTIONS (2)" in text
    assert "> qa  send-secret  claude-code  anthropic/v1/messages  claude-x  redact in 8" in text
    assert "  qb " in text and "helper proposes block" in text
    assert "github-token  ghp_********abcd  tool_result Bash  rule secrets.github" in text
    assert "| GITHUB_TOKEN=ghp_********abcd" in text and "| B" in text and "| C" not in text
    row = next(line for line in text.splitlines() if line.strip().startswith("7 "))
    assert row.split()[2:5] == ["modified", "200", "codex"] and "1234B" in row
    assert "\x1b[" not in text


def test_width_cuts_lines_and_color_styles_them() -> None:
    view = View(data_dir="/d" * 100, message="qa: redact")
    lines = render(Snapshot([REQUEST], [question("qa")], None), view, width=40, color=True)
    assert all(len(line.replace("\x1b[0m", "").split("m", 1)[-1]) <= 40 for line in lines)
    assert any(line.startswith("\x1b[33m") and "qa: redact" in line for line in lines)
    assert any(line.startswith("\x1b[33m") and "modified" in line for line in lines)


def test_no_gate_and_no_requests_say_so() -> None:
    text = "\n".join(
        render(
            Snapshot([], [], "no gate is running for data dir /d"),
            View(data_dir="/d"),
            width=None,
            color=False,
        )
    )
    assert "no gate is running for data dir /d" in text
    assert "no requests recorded yet" in text


def test_selection_follows_open_questions_and_moves_within_bounds() -> None:
    view = View(data_dir="/d")
    pending = [question("qa"), question("qb"), question("qc")]
    view.follow(pending)
    assert view.selected == "qa"
    view.move(pending, 1)
    view.move(pending, 1)
    view.move(pending, 1)
    assert view.selected == "qc"
    view.move(pending, -5)
    assert view.selected == "qa"
    view.selected = "qb"
    view.follow([question("qa"), question("qc")])  # qb was answered elsewhere
    assert view.selected == "qa"
    view.follow([])
    assert view.selected is None and view.selected_in([]) is None


def test_keys_split_arrows_from_letters() -> None:
    assert list(keys("\x1b[Aj\x1b[BqR\x1bOA")) == ["up", "j", "down", "q", "R", "up"]


def test_keys_without_a_running_gate_explain_instead_of_failing(tmp_path: Path) -> None:
    view = View(data_dir=str(tmp_path))
    press("a", view, [], tmp_path)
    assert view.message == "no question selected"
    pending = [question("qa")]
    view.follow(pending)
    press("R", view, pending, tmp_path)
    assert view.choosing == "redact" and "s session, p project, w always" in view.message
    press("x", view, pending, tmp_path)
    assert view.choosing is None and view.message == "cancelled"
    press("b", view, pending, tmp_path)
    assert view.message.startswith("no gate is running for data dir")


def test_what_an_agent_sent_cannot_drive_the_terminal() -> None:
    evil = question("qa")
    evil["findings"][0]["context"] = "a\x1b[2J\x1b]0;pwned\x07b\tc\u202etxt.exe"
    evil["request"]["model"] = "m\x9b31m"
    text = "\n".join(
        render(Snapshot([], [evil], None), View(data_dir="/d"), width=None, color=False)
    )
    assert "| a^[[2J^[]0;pwned^Gb c?txt.exe" in text and "m?31m" in text
    assert not any(c in text for c in "\x1b\x07\x9b\u202e\t")
