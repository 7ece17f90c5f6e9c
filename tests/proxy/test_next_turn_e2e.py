"""A growing conversation through a real gate listener (the anthropic SDK as the client):
from the second turn on gate takes up the last turn's messages and screens what each turn
added, and what reaches the provider is what screening each body whole sends."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import anthropic
import pytest
from loguru import logger

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import IndexStore
from gate.screen.request import Outbound, Screens, screen
from messages import conversation, tool_turn


@pytest.fixture
def reused() -> Iterator[list[str]]:
    """gate's debug lines about reused turns."""
    lines: list[str] = []
    sink = logger.add(
        lambda m: lines.append(str(m).strip()),
        level="DEBUG",
        format="{message}",
        filter=lambda r: r["message"].startswith("next turn:"),
    )
    yield lines
    logger.remove(sink)


def test_each_turn_after_the_first_reuses_the_last_ones_messages(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    reused: list[str],
) -> None:
    project, data = gate_dirs["project"], gate_dirs["data"]
    value = "API_TOKEN=" + fake_secret()
    (project / ".env").write_text(value + "\n")
    steps = [tool_turn("toolu_env", "Read", {"file_path": f"{project}/.env"}, "1\t" + value)]
    for i in range(5):
        steps.append(tool_turn(f"toolu_{i}", "Bash", {"command": f"echo {i}"}, f"{i}\n" * 50))
        body = conversation(str(project), *steps)
        client.messages.create(**body)
    assert len(reused) == 4, reused
    # Turn n+1 adds two messages to turn n's: all of turn n's are reused.
    assert reused == [f"next turn: {n} of {n} items reused, 2 new" for n in (5, 7, 9, 11)]
    sent = [s for s in provider.seen if s.path == "/v1/messages"]
    assert len(sent) == 5 and all(value.encode() not in s.body for s in sent)
    # What a fresh screening of each body sends (tests/screen/test_turns.py compares the
    # bytes; the SDK orders keys its own way, so here the parsed bodies are compared).
    screens = Screens(IndexStore(), SecretScreen.load(data), items=None, walks=None, bodies=None)
    for i, seen in enumerate(sent):
        raw = json.dumps(conversation(str(project), *steps[: i + 2])).encode()
        verdict = screen(
            Outbound(path="/v1/messages", body=raw, agent=None, project_root=None),
            PolicyStore(),
            screens,
        )
        assert verdict.body is not None and json.loads(verdict.body) == seen.json()
