"""`gate watch` on a pseudo-terminal answers parked requests of a real gate with one key."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anthropic
import pytest
from click.testing import CliRunner

from ask.ask_kit import AskingGate, env_turn, github_token
from decisions.term import Term
from gate.ask.memory import memory_path
from gate.cli import cli


def test_r_redacts_the_selected_question_and_the_row_appears(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path], watch: Term
) -> None:
    g = asking()
    token = github_token()
    sent = g.send(env_turn(gate_dirs["project"], token))
    [q] = g.wait_pending()
    seen = watch.expect(f"> {q['id']}  send-secret")
    watch.expect(f"{token[:4]}", after=seen)  # the masked preview, drawn
    at = watch.press("r")
    watch.expect(f"{q['id']}: redact", after=at)
    assert sent.wait().error is None
    body = g.provider.seen[-1].body.decode()
    assert token not in body and "[gate: redacted" in body
    watch.expect("modified", after=at)  # the request, now sent, in the recent list
    watch.expect("PENDING QUESTIONS (0)", after=at)
    assert token.encode() not in watch.out
    watch.press("q")
    assert watch.wait() == 0


def test_selection_moves_and_b_blocks_only_the_selected_one(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path], watch: Term
) -> None:
    g = asking()
    first, second = github_token(), github_token()
    sent = [
        g.send(env_turn(gate_dirs["project"], t, f"toolu_{i}"))
        for i, t in enumerate((first, second))
    ]
    older, newer = g.wait_pending(2)
    # A key acts on the list of the frame last drawn: press only once a frame shows both
    # (the older one selected, the newer one below it), or "j" moves within a list of one.
    seen = watch.expect(f"> {older['id']}")
    watch.expect(f"  {newer['id']}", after=seen)
    at = watch.press("j")
    watch.expect(f"> {newer['id']}", after=at)
    at = watch.press("b")
    watch.expect(f"{newer['id']}: block", after=at)
    assert [q["id"] for q in g.control().pending()] == [older["id"]]
    watch.expect(f"> {older['id']}", after=at)  # the selection falls back to what is open
    at = watch.press("a")
    watch.expect(f"{older['id']}: approve", after=at)
    for s in sent:
        s.wait()
    by_token = {t: s for t, s in zip((first, second), sent, strict=True)}
    blocked = by_token[second if newer["findings"][0]["preview"][-4:] == second[-4:] else first]
    assert isinstance(blocked.error, anthropic.BadRequestError)
    bodies = "".join(s.body.decode() for s in g.provider.seen)
    assert len(g.provider.seen) == 1
    assert (first in bodies) != (second in bodies)  # the approved one only, as it was


@pytest.mark.parametrize(("key", "scope"), [("s", "session"), ("p", "project"), ("w", "always")])
def test_shift_a_then_a_scope_key_approves_and_remembers(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path], watch: Term, key: str, scope: str
) -> None:
    g = asking()
    token = github_token()
    body = env_turn(gate_dirs["project"], token)
    sent = g.send(body)
    [q] = g.wait_pending()
    watch.expect(f"> {q['id']}")
    at = watch.press("A")
    watch.expect("approve and remember for: s session, p project, w always", after=at)
    at = watch.press(key)
    watch.expect(f"{q['id']}: approve, remembered ({scope})", after=at)
    assert sent.wait().error is None
    assert token in g.provider.seen[-1].body.decode()
    again = g.send(body).wait(20)  # the next turn resends it: decided by memory, not asked
    assert again.error is None and len(g.provider.seen) == 2
    lines = (g.data / "decisions" / "dataset" / "send-secret.jsonl").read_text().splitlines()
    assert [json.loads(x)["by"] for x in lines] == ["person", "memory"]
    assert json.loads(lines[0])["remember"] == scope
    assert all(token not in x for x in lines)
    listed = json.loads(CliRunner().invoke(cli, ["decisions", "list", "--json"]).stdout)
    if scope == "session":  # kept in the running gate only
        assert listed == {"ok": True, "decisions": []} and not memory_path(g.data).exists()
        return
    assert token.encode() not in memory_path(g.data).read_bytes()
    [entry] = listed["decisions"]
    assert (entry["scope"], entry["answer"], entry["question_id"]) == (scope, "approve", q["id"])
    assert entry["project"] == (str(gate_dirs["project"]) if scope == "project" else None)


def test_escape_cancels_a_remember_and_the_question_stays(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path], watch: Term
) -> None:
    g = asking()
    sent = g.send(env_turn(gate_dirs["project"], github_token()))
    [q] = g.wait_pending()
    watch.expect(f"> {q['id']}")
    watch.press("R")
    at = watch.press("\x1b")
    watch.expect("cancelled", after=at)
    assert [p["id"] for p in g.control().pending()] == [q["id"]]
    g.control().answer(q["id"], "redact")
    assert sent.wait().error is None
