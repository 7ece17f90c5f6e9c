"""A rule file the agent loosens while gate runs: held, asked about, applied once a person
approves, through a real gate and the real CLI."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from loguru import logger

from ask.ask_kit import AskingGate
from ask.control_kit import call, token
from gate.cli import cli
from messages import conversation, tool_turn

RULES = "deny:\n  - Read(./notes/**)\n  - Bash(curl *)\n"
WITHOUT_NOTES = "deny:\n  - Bash(curl *)\n"


def _project(root: Path) -> str:
    """The project's rules and a file they deny; its content, made at run time."""
    content = "the plan: " + os.urandom(8).hex()
    (root / "notes").mkdir()
    (root / "notes" / "plan.txt").write_text(content + "\n")
    _rules(root, RULES, 1)
    return content


def _rules(root: Path, text: str, stamp: int) -> None:
    path = root / ".gate" / "rules.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    os.utime(path, (stamp, stamp))  # a different mtime, whatever the clock's resolution


def _read_turn(root: Path, content: str, n: int) -> dict[str, Any]:
    """A Claude Code body whose Read of notes/plan.txt returned `content`."""
    path = str(root / "notes" / "plan.txt")
    return conversation(
        str(root), tool_turn(f"toolu_{n}", "Read", {"file_path": path}, f"     1\t{content}\n")
    )


def _sent(g: AskingGate, root: Path, content: str, n: int) -> str:
    """Send a turn reading the file; what reached the provider."""
    sent = g.send(_read_turn(root, content, n)).wait()
    assert sent.error is None, sent.error
    return g.provider.seen[-1].body.decode()


def _loosen_questions(g: AskingGate, n: int = 1) -> list[dict[str, Any]]:
    pending = g.wait_pending(n)
    assert all(q["kind"] == "loosen-rule" for q in pending), pending
    return pending


def test_a_deleted_deny_rule_applies_once_a_person_approves_on_the_cli(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    root = gate_dirs["project"]
    content = _project(root)
    g = asking()
    assert content not in _sent(g, root, content, 1)  # denied
    _rules(root, WITHOUT_NOTES, 2)  # the agent deletes the deny rule
    assert content not in _sent(g, root, content, 2)  # held: still withheld
    [q] = _loosen_questions(g)
    assert q["request"]["file"] == ".gate/rules.yaml" and q["expires"] is None
    assert q["answers"] == ["approve", "block"] and q["default"] == "block"
    [f] = q["findings"]
    assert (f["rule"], f["where"]) == ("Read(./notes/**)", ".gate/rules.yaml:2")
    assert f["preview"] == "deny rule removed (or no longer valid)"
    listed = CliRunner().invoke(cli, ["pending"])
    assert listed.exit_code == 0, listed.output
    assert f"{q['id']}  loosen-rule  .gate/rules.yaml changed while gate runs" in listed.output
    assert "Read(./notes/**)  .gate/rules.yaml:2  deny rule removed" in listed.output
    assert "None" not in listed.output
    as_json = CliRunner().invoke(cli, ["pending", "--json"])
    assert json.loads(as_json.output) == {"ok": True, "pending": [q]}
    frame = CliRunner().invoke(cli, ["watch", "--once"])
    assert frame.exit_code == 0, frame.output
    assert f"{q['id']}  loosen-rule  .gate/rules.yaml changed while gate runs" in frame.output
    assert "deny rule removed (or no longer valid)  .gate/rules.yaml:2" in frame.output
    assert " in 0s" not in frame.output and "None" not in frame.output
    assert content not in _sent(g, root, content, 3)  # unanswered: still held
    assert [p["id"] for p in g.control().pending()] == [q["id"]]  # and asked once
    done = CliRunner().invoke(cli, ["approve", q["id"]])
    assert done.exit_code == 0, done.output
    assert done.output.strip() == f"{q['id']}: approve"  # once: nothing remembered
    assert content in _sent(g, root, content, 4)  # the new rules decide
    assert g.control().pending() == []


def test_a_blocked_loosening_keeps_the_rule(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    root = gate_dirs["project"]
    content = _project(root)
    g = asking()
    assert content not in _sent(g, root, content, 1)
    _rules(root, WITHOUT_NOTES, 2)
    assert content not in _sent(g, root, content, 2)
    [q] = _loosen_questions(g)
    done = CliRunner().invoke(cli, ["block", q["id"]])
    assert done.exit_code == 0, done.output
    assert content not in _sent(g, root, content, 3)
    _rules(root, WITHOUT_NOTES, 3)  # saved again unchanged: not asked again
    assert content not in _sent(g, root, content, 4)
    assert g.control().pending() == []


def test_the_agent_editing_twice_leaves_one_open_question(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    root = gate_dirs["project"]
    content = _project(root)
    g = asking()
    assert content not in _sent(g, root, content, 1)
    _rules(root, WITHOUT_NOTES, 2)
    assert content not in _sent(g, root, content, 2)
    [first] = _loosen_questions(g)
    _rules(root, "allow:\n  - Bash(curl *)\n", 3)  # and the curl deny rule too
    assert content not in _sent(g, root, content, 3)
    deadline = time.monotonic() + 20
    while [q["id"] for q in g.control().pending()] == [first["id"]]:
        assert time.monotonic() < deadline, "the first question was never replaced"
        time.sleep(0.05)
    [second] = _loosen_questions(g)
    assert {f["rule"] for f in second["findings"]} == {"Read(./notes/**)", "Bash(curl *)"}
    old = CliRunner().invoke(cli, ["approve", first["id"]])
    assert old.exit_code != 0 and "already answered" in old.output
    assert content not in _sent(g, root, content, 4)  # the stale answer loosened nothing
    assert CliRunner().invoke(cli, ["approve", second["id"]]).exit_code == 0
    assert content in _sent(g, root, content, 5)


def test_a_loosen_question_takes_approve_or_block_only_and_is_never_remembered(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    root = gate_dirs["project"]
    content = _project(root)
    g = asking()
    _sent(g, root, content, 1)
    _rules(root, WITHOUT_NOTES, 2)
    _sent(g, root, content, 2)
    [q] = _loosen_questions(g)
    api = f"/_gate/api/pending/{q['id']}"
    auth = token(g.data)
    status, reply = call(g.listening, "POST", api, body={"answer": "redact"}, auth=auth)
    assert status == 400 and "approve or block" in reply["error"]
    for scope in ("project", "always", "team"):
        body = {"answer": "approve", "remember": scope}
        status, reply = call(g.listening, "POST", api, body=body, auth=auth)
        assert status == 400 and "never remembered" in reply["error"], scope
    assert call(g.listening, "POST", api, body={"answer": "approve"})[0] == 401  # no token
    assert [p["id"] for p in g.control().pending()] == [q["id"]]  # none of that answered it
    assert content not in _sent(g, root, content, 3)


def test_a_deleted_rule_file_is_held_until_approved(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    root = gate_dirs["project"]
    content = _project(root)
    g = asking()
    assert content not in _sent(g, root, content, 1)
    (root / ".gate" / "rules.yaml").unlink()  # the agent deletes the whole file
    assert content not in _sent(g, root, content, 2)
    [q] = _loosen_questions(g)
    assert {f["rule"] for f in q["findings"]} == {"Read(./notes/**)", "Bash(curl *)"}
    assert CliRunner().invoke(cli, ["approve", q["id"]]).exit_code == 0
    assert content in _sent(g, root, content, 3)


def test_gate_rules_says_what_the_running_gate_holds_and_keeps(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    root = gate_dirs["project"]
    content = _project(root)
    g = asking()
    assert content not in _sent(g, root, content, 1)
    _rules(root, WITHOUT_NOTES, 2)
    assert content not in _sent(g, root, content, 2)
    [q] = _loosen_questions(g)
    listed = CliRunner().invoke(cli, ["rules", "--project", str(root)])
    assert listed.exit_code == 0, listed.output
    assert "Read(./notes/**)" not in listed.stdout  # the file no longer says it ...
    said = listed.stderr
    assert f"the running gate (http://127.0.0.1:{g.listening.port})" in said  # ... gate does
    assert "rule Read(./notes/**) was removed or weakened in .gate/rules.yaml" in said
    assert f"question {q['id']} waits for a person" in said
    as_json = CliRunner().invoke(cli, ["rules", "--json", "--project", str(root)])
    [running] = json.loads(as_json.stdout)["running"]
    assert any("until a person confirms" in w for w in running["warnings"])
    # The agent then breaks the file: gate keeps the last good rules, and says so.
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="WARNING", format="{message}")
    try:
        _rules(root, "deny:\n  - Bash(curl\n", 3)
        assert content not in _sent(g, root, content, 3)
    finally:
        logger.remove(sink)
    assert any("gate keeps this file's previous rules until it is fixed" in x for x in lines)
    broken = CliRunner().invoke(cli, ["rules", "--project", str(root)])
    assert broken.exit_code == 1 and "'Bash(curl' is not a rule" in broken.stderr
    assert "the running gate" in broken.stderr
    assert "gate keeps this file's previous rules until it is fixed" in broken.stderr
    assert [p["id"] for p in g.control().pending()] == [q["id"]]  # still the good edit's


def test_a_person_approves_a_loosening_on_the_page(
    asking: Callable[..., AskingGate], browser: Any, gate_dirs: dict[str, Path]
) -> None:
    root = gate_dirs["project"]
    content = _project(root)
    g = asking()
    assert content not in _sent(g, root, content, 1)
    _rules(root, WITHOUT_NOTES, 2)
    assert content not in _sent(g, root, content, 2)
    [q] = _loosen_questions(g)
    page = browser.new_page()
    try:
        page.goto(g.control().page_url)
        card = page.locator(f"#{q['id']}")
        text = card.inner_text()
        assert ".gate/rules.yaml changed while gate runs and would loosen 1 rule(s)" in text
        assert "Read(./notes/**)" in text and ".gate/rules.yaml:2" in text
        assert "None" not in text and "Nobody answering in" not in text  # no countdown
        buttons = card.locator("button")
        assert buttons.count() == 2  # approve once, or keep the rules: nothing remembered
        assert card.locator("button.block").get_attribute("value") == "block:once"
        card.get_by_role("button", name="Let the change take effect").click()
        card.wait_for(state="detached", timeout=15000)
        note = page.locator("#note").inner_text()
        assert note == f"{q['id']}: approve, the change takes effect"
    finally:
        page.close()
    assert content in _sent(g, root, content, 3)
