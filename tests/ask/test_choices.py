"""Answers, scopes and secret actions are StrEnums inside gate; on the wire, in the audit,
the dataset, decision memory and the rule files they are the same strings as before."""

from __future__ import annotations

import json
import time
from pathlib import Path

import orjson

from gate.ask.choices import ANSWERS, Choice, Scope
from gate.ask.memory import DecisionMemory
from gate.ask.park import Decided
from gate.ask.questions import Answer, By, Question
from gate.rules.engine import Policy
from gate.rules.loader import SECRET_ACTIONS, read_file
from gate.rules.model import SecretAction

KEY = b"k" * 32


def test_the_strings_on_disk_and_on_the_wire_are_unchanged() -> None:
    assert [str(a) for a in ANSWERS] == ["approve", "redact", "block"]
    assert [str(s) for s in Scope] == ["once", "session", "project", "always", "team"]
    assert [str(a) for a in SECRET_ACTIONS] == ["block", "ask", "redact", "allow"]
    decided = Decided("q1", "send-secret", Choice.APPROVE, By.PERSON).record()
    want = {"id": "q1", "question": "send-secret", "answer": "approve", "by": "person"}
    # The audit's `decision` and the dataset are written with both JSON libraries.
    assert json.loads(json.dumps(decided)) == orjson.loads(orjson.dumps(decided)) == want
    assert type(json.loads(json.dumps(decided))["answer"]) is str


def test_a_dataset_line_holds_plain_strings() -> None:
    q = Question(
        id="q1",
        kind="send-secret",
        default=Choice.REDACT,
        request={},
        findings=[],
        keys=(),
        timeout=60.0,
    )
    line = json.loads(orjson.dumps(q.record(Answer(Choice.BLOCK, By.PERSON, Scope.SESSION))))
    assert (line["default"], line["answer"], line["remember"]) == ("redact", "block", "session")


def test_a_memory_file_written_before_still_reads(gate_dirs: dict[str, Path]) -> None:
    """memory.json as an earlier gate wrote it: plain strings, read back as answers."""
    data = gate_dirs["data"]
    mem = DecisionMemory(data, KEY)
    fp = mem.fingerprint("value", "github-token")
    (data / "decisions").mkdir(parents=True, mode=0o700)
    now = time.time()
    entry = {
        "id": "e1",
        "fingerprint": fp,
        "kind": "github-token",
        "answer": "approve",
        "scope": "always",
        "session": None,
        "project": None,
        "created": now,
        "expires": now + 3600,
        "question_id": "q0",
    }
    path = data / "decisions" / "memory.json"
    path.write_text(json.dumps({"schemaVersion": 1, "entries": [entry]}))
    path.chmod(0o600)
    hit = DecisionMemory(data, KEY).lookup(fp, "github-token", session="s", project="/p")
    assert hit is not None and hit.answer == Choice.APPROVE and Choice(hit.answer) is Choice.APPROVE


def test_a_rule_file_still_reads_and_its_actions_are_enums(tmp_path: Path) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text("secrets:\n  high: block\n  github-token: allow\n  low: ask\n")
    loaded = read_file(rules)
    assert [(k, a) for k, a, _ in loaded.secrets] == [
        ("high", "block"),
        ("github-token", "allow"),
        ("low", "ask"),
    ]
    assert all(type(a) is SecretAction for _, a, _ in loaded.secrets)
    policy = Policy(
        rules=(), secrets=(("trusted", (tuple((k, a) for k, a, _ in loaded.secrets),)),)
    )
    assert policy.secret_action("github-token", "github-pat", "high") is SecretAction.ALLOW
    assert policy.secret_action("aws-key", "aws", "high") is SecretAction.BLOCK
    assert policy.secret_action("x", "y", "low") is SecretAction.ASK
    assert Policy(rules=()).secret_action("x", "y", "high") is SecretAction.ASK  # nothing said
