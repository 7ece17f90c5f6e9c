"""Did a value in history also leave through gate? Asked of a real gate's audit: one value
it forwarded, one it withheld, one it never saw."""

from __future__ import annotations

import time
from pathlib import Path

import anthropic
import pytest
from history.builders import github_token, plant
from history.kit import scan_json


def test_sent_withheld_and_not_seen(
    client: anthropic.Anthropic,
    gate_dirs: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    p = plant(tmp_path / "user")
    unseen = github_token()
    # Without a project (plain `gate serve`) the .env value is no denied value to gate, and
    # no detector knows it: it leaves. The token is a high-tier secret: withheld.
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=16,
        messages=[{"role": "user", "content": f"remember {p.denied}"}],
    )
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=16,
        messages=[{"role": "user", "content": f"and the token {p.token}"}],
    )
    sid = "s1"
    path = p.home / ".claude" / "projects" / "-p" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(
        "".join(
            '{"type":"user","sessionId":"s1","cwd":"' + str(p.project) + '","message":'
            '{"role":"user","content":"' + text + '"}}\n'
            for text in (f"remember {p.denied}", f"and the token {p.token}", f"and {unseen}")
        )
    )
    monkeypatch.chdir(p.project)
    deadline = time.time() + 10
    while True:  # the audit row is committed before forwarding; its response after
        _, doc = scan_json(p.home)
        by = {g["preview"][:4] + g["preview"][-4:]: g for g in doc["groups"]}
        if len(by) == 3 or time.time() > deadline:
            break
        time.sleep(0.1)
    status = {g["gate"] for g in doc["groups"]}
    assert status == {"sent", "withheld", "not-seen"}, doc
    sent = next(g for g in doc["groups"] if g["gate"] == "sent")
    assert sent["source"] == str(p.project / ".env")
    assert sent["gate_text"].startswith("sent via gate on ")
    withheld = next(g for g in doc["groups"] if g["gate"] == "withheld")
    assert withheld["preview"][:4] == p.token[:4] and withheld["preview"][-4:] == p.token[-4:]
    assert withheld["gate_text"].startswith("withheld by gate on ")
    # Rotate first what left: the sent value leads the list.
    assert doc["groups"][0]["gate"] == "sent"
    assert next(g for g in doc["groups"] if g["gate"] == "not-seen")["preview"][-4:] == unseen[-4:]


def test_an_unreadable_audit_says_unknown(tmp_path: Path, gate_dirs: dict[str, Path]) -> None:
    """A damaged audit never turns into 'not seen by gate'."""
    p = plant(tmp_path / "user")
    gate_dirs["data"].mkdir(parents=True, exist_ok=True)
    (gate_dirs["data"] / "audit.db").write_bytes(b"not a database" * 100)
    path = p.home / ".claude" / "projects" / "-p" / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"type":"user","message":{"role":"user","content":"' + p.token + '"}}\n')
    code, doc = scan_json(p.home)
    assert code == 1 and [g["gate"] for g in doc["groups"]] == ["unknown"]
    assert any("cannot read gate's audit" in e for e in doc["errors"])
