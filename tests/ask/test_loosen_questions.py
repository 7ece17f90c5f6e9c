"""The loosen-rule questions of one gate (gate/ask/loosen.py) over a real PolicyStore: one
open question per file, replaced by a further edit, never asked again once answered."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

from gate.ask.loosen import Loosenings, findings
from gate.ask.questions import LOOSEN_ANSWERS, LOOSEN_RULE, Answer, By, Pending, Question
from gate.proxy.control import Who
from gate.rules.held import Change, Loosening
from gate.rules.layers import PolicyStore


def _write(path: Path, text: str, stamp: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (stamp, stamp))


async def _settled() -> None:
    for _ in range(3):  # call_soon_threadsafe, then the futures' done callbacks
        await asyncio.sleep(0)


@pytest.mark.parametrize("answer", ["approve", "block"])
def test_an_answered_question_is_not_asked_again_when_another_file_changes(
    gate_dirs: dict[str, Path], answer: str
) -> None:
    root = gate_dirs["project"]
    team, local = root / ".gate" / "rules.yaml", root / ".gate" / "rules.local.yaml"
    _write(team, "deny:\n  - Read(./a)\n", 1)
    _write(local, "deny:\n  - Read(./b)\n", 1)

    async def run() -> None:
        store, pending = PolicyStore(), Pending()
        questions = Loosenings(pending, store.confirm)
        store.on_loosen = questions.changed
        questions.attach(asyncio.get_running_loop())
        store.policy_for(str(root))
        _write(team, "deny:\n  - Read(./z)\n", 2)
        store.policy_for(str(root))
        await _settled()
        [q] = pending.questions()
        assert q.kind == LOOSEN_RULE and q.request["file"] == ".gate/rules.yaml"
        pending.answer(q.id, Answer(answer, By.PERSON))
        await _settled()
        rules = {r.text for r in store.policy_for(str(root)).rules if r.layer == "project"}
        assert ("Read(./a)" in rules) is (answer == "block")
        _write(local, "deny:\n  - Read(./b)\n  - Read(./c)\n", 3)  # another file: tightened
        store.policy_for(str(root))
        await _settled()
        assert pending.questions() == []

    asyncio.run(run())


def test_a_further_edit_replaces_the_open_question(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    team = root / ".gate" / "rules.yaml"
    _write(team, "deny:\n  - Read(./a)\n  - Read(./b)\n", 1)

    async def run() -> None:
        store, pending = PolicyStore(), Pending()
        questions = Loosenings(pending, store.confirm)
        store.on_loosen = questions.changed
        questions.attach(asyncio.get_running_loop())
        store.policy_for(str(root))
        _write(team, "deny:\n  - Read(./b)\n", 2)
        store.policy_for(str(root))
        _write(team, "deny:\n  - Read(./b)\n", 3)  # saved again: the same question
        store.policy_for(str(root))
        await _settled()
        [first] = pending.questions()
        _write(team, "deny:\n  - Read(./c)\n", 4)
        store.policy_for(str(root))
        await _settled()
        [second] = pending.questions()
        assert second.id != first.id
        assert {f["rule"] for f in second.findings} == {"Read(./a)", "Read(./b)"}
        with pytest.raises(ValueError, match="already answered"):
            pending.answer(first.id, Answer("approve", By.PERSON))  # withdrawn
        # Undone (Read(./c), in force since edit 4, stays too): nothing to ask.
        _write(team, "deny:\n  - Read(./a)\n  - Read(./b)\n  - Read(./c)\n", 5)
        store.policy_for(str(root))
        await _settled()
        assert pending.questions() == []

    asyncio.run(run())


def test_on_a_shared_gate_only_an_admin_sees_a_loosen_question(
    gate_dirs: dict[str, Path],
) -> None:
    lo = Loosening(
        key=("f", ".gate/rules.yaml", None),
        file=".gate/rules.yaml",
        layer="project",
        changes=(
            Change(rule="Read(./a)", where=".gate/rules.yaml:2", effect="deny", becomes="removed"),
        ),
    )
    q = Question(
        id="q1",
        kind=LOOSEN_RULE,
        default="block",
        request={"file": lo.file},
        findings=findings(lo),
        keys=(),
        timeout=None,
        answers=LOOSEN_ANSWERS,
        once=True,
    )
    assert not Who("alice", admin=False).sees(q)
    assert Who("root", admin=True).sees(q) and Who(None, admin=True).sees(q)
