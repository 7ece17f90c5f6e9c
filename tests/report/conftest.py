"""The `audit` fixture: see report/audit_rows.py."""

from __future__ import annotations

import os
import time
from pathlib import Path

import anthropic
import pytest

from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from messages import conversation, tool_turn
from report.audit_rows import Audit, fake_token, insert, inserted_rows, wait_for_responses


@pytest.fixture
def audit(client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]) -> Audit:
    prompt = "report-test prompt " + os.urandom(6).hex()
    client.messages.create(
        model="claude-e2e", max_tokens=8, messages=[{"role": "user", "content": prompt}]
    )
    token, hidden = fake_token(), fake_token()
    client.messages.create(
        **conversation(
            str(gate_dirs["project"]),
            tool_turn("toolu_1", "Bash", {"command": "env"}, f"GITHUB_TOKEN={token}\n"),
            model="claude-e2e",
        )
    )
    body = conversation("/p", model="claude-e2e")
    body["messages"] += [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": f"use GITHUB_TOKEN={hidden}", "signature": "c2ln"},
                {"type": "text", "text": "ok"},
            ],
        },
        {"role": "user", "content": "go"},
    ]
    with pytest.raises(anthropic.BadRequestError):
        client.messages.create(**body)
    store = AuditStore(gate_dirs["data"] / "audit.db")
    wait_for_responses(store, 3)
    now = time.time()
    rows = inserted_rows()
    for row in rows:
        insert(store, row, b"inserted body " + prompt.encode())
    store.close()
    return Audit(now, (token, hidden), prompt, sum(len(s.body) for s in provider.seen), rows)
