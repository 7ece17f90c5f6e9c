"""`gate search --value-of`: one answer per value (sent, approved, withheld, never seen),
over a real audit written the way the gate writes it."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path

from click.testing import CliRunner

from gate.audit.records import RequestRow
from gate.audit.store import AuditStore
from gate.cli import cli
from gate.screen import secrets
from gate.screen.verdict import Withheld, Withholding
from screen.secrets_corpus import Gen


def token() -> str:
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("gh" + "p_")


def body(text: str) -> bytes:
    return json.dumps({"model": "m", "messages": [{"role": "user", "content": text}]}).encode()


def secret_entry(value: str, key: bytes, answer: str | None) -> dict[str, object]:
    decision = (
        {"id": "q1", "question": "send-secret", "answer": answer, "by": "person"}
        if answer
        else None
    )
    return Withheld(
        kind=Withholding.SECRET,
        target=None,
        rule="github-pat",
        where="tier high: ask",
        fingerprint=secrets.keyed_hash(value, key)[:16],
        decision=decision,
    ).record()


def row(
    store: AuditStore, text: str, withheld: list[dict[str, object]], verdict: str = "forwarded"
) -> int:
    return store.record_request(
        RequestRow(
            agent="claude-code",
            upstream="anthropic",
            host="h",
            method="POST",
            path="/v1/messages",
            request_bytes=len(text),
            verdict=verdict,
            withheld=withheld,
            body=body(text),
            session="s",
        ),
    )


def test_each_value_answered_sent_approved_withheld_or_unseen(
    gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    key = secrets.load_or_create_key(gate_dirs["data"])
    approved, redacted, plain = token(), token(), "blue-otter-" + os.urandom(6).hex()
    unseen = "never-sent-" + os.urandom(6).hex()
    notes = tmp_path / "notes.txt"  # prose, not KEY=VALUE: the tokens sit inside sentences
    notes.write_text(
        f"my github token is {approved} keep it safe\n"
        f"the old one was {redacted} (rotated)\n"
        f"PASS={plain}\nOTHER={unseen}\n"
    )
    store = AuditStore(gate_dirs["data"] / "audit.db")
    first = row(store, f"use {approved} to push", [secret_entry(approved, key, "approve")])
    second = row(
        store, "the old one was [gate: secret withheld]", [secret_entry(redacted, key, "redact")]
    )
    third = row(
        store,
        f"the password is {plain}; and {approved} again",
        [secret_entry(approved, key, "approve")],
    )
    result = CliRunner().invoke(cli, ["search", "--value-of", str(notes), "--json"])
    assert result.exit_code == 1, result.output
    out = json.loads(result.stdout)
    by_status = {a["value"]: a for a in out["values"]}
    assert len(by_status) == 4
    for value in (approved, redacted, plain, unseen):
        assert value not in result.stdout
    answers = sorted(out["values"], key=lambda a: a["value"])
    tok, old, pw, other = answers
    assert tok["status"] == "sent" and tok["withheld"] == []  # approved means it left
    assert [(s["request"], s["approved_by"]) for s in tok["sent"]] == [
        (first, "person"),
        (third, "person"),
    ]
    assert old["status"] == "withheld" and old["sent"] == []
    assert [(h["request"], h["answer"]) for h in old["withheld"]] == [(second, "redact")]
    assert pw["status"] == "sent" and [s["approved_by"] for s in pw["sent"]] == [None]
    assert other["status"] == "never seen"
    text = CliRunner().invoke(cli, ["search", "--value-of", str(notes)]).stdout
    assert "value 1 of notes.txt: SENT in 2 request(s)" in text
    assert "approved by person" in text
    assert "value 2 of notes.txt: withheld, never sent" in text and "not sent" not in text
    assert "never seen" in text


def test_a_request_that_carried_the_value_is_not_also_listed_as_withheld(
    gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    key = secrets.load_or_create_key(gate_dirs["data"])
    value = token()
    env = tmp_path / "a.env"
    env.write_text(f"GITHUB_TOKEN={value}\n")
    store = AuditStore(gate_dirs["data"] / "audit.db")
    # Redacted in one place, but sent base64'd elsewhere in the same body: it left.
    import base64

    both = row(
        store,
        "encoded " + base64.b64encode(value.encode()).decode(),
        [secret_entry(value, key, None)],
    )
    only = row(store, "nothing here", [secret_entry(value, key, None)])
    out = json.loads(CliRunner().invoke(cli, ["search", "--value-of", str(env), "--json"]).stdout)
    (answer,) = out["values"]
    assert [s["request"] for s in answer["sent"]] == [both]
    assert [h["request"] for h in answer["withheld"]] == [only]


def test_a_withheld_read_of_the_file_answers_for_every_value(
    gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    env = gate_dirs["project"] / ".env"
    env.write_text(f"A={os.urandom(8).hex()}\nB={os.urandom(8).hex()}\n")
    store = AuditStore(gate_dirs["data"] / "audit.db")
    entry = Withheld.tool_result(
        call_id="c1", tool="Read", target="./.env", rule="Read(./.env)", where="rules.yaml:1"
    ).record()
    rid = store.record_request(
        RequestRow(
            agent="claude-code",
            upstream="anthropic",
            host="h",
            method="POST",
            path="/v1/messages",
            request_bytes=1,
            verdict="modified",
            withheld=[entry],
            body=body("[withheld]"),
            project_root=str(gate_dirs["project"]),
        ),
    )
    result = CliRunner().invoke(cli, ["search", "--value-of", str(env), "--json"])
    assert result.exit_code == 0
    out = json.loads(result.stdout)
    assert [a["status"] for a in out["values"]] == ["withheld", "withheld"]
    assert all(a["withheld"][0]["request"] == rid for a in out["values"])
