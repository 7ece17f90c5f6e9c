"""An answer given without a scope holds for the rest of the conversation: the next turn,
which resends what the provider already has, is not asked again; another conversation is."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic

from ask.ask_kit import AskingGate, env_turn, github_token


def in_conversation(gate: AskingGate, sid: str, body: dict[str, Any]) -> Any:
    with anthropic.Anthropic(
        base_url=f"{gate.listening.base_url}/anthropic",
        api_key="sk-ant-test",
        max_retries=0,
        timeout=5,
        default_headers={"x-claude-code-session-id": sid},
    ) as c:
        return c.messages.create(**body)


def test_approve_without_a_scope_covers_this_conversation_only(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    gate = asking(timeout_seconds=3, default="block")
    token = github_token()
    first = env_turn(gate_dirs["project"], token)
    sent = gate.send(first)  # no session header: its own conversation
    (question,) = gate.wait_pending()
    gate.control().answer(question["id"], "approve")  # the page's and CLI's default scope
    assert sent.wait().error is None
    # The same conversation's next turn resends the approved content: answered already.
    later = {
        **first,
        "messages": [
            *first["messages"],
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "and now?"},
        ],
    }
    again = gate.send(later).wait(10)
    assert again.error is None, again.error  # asked again, it would time out to block
    assert token in gate.provider.seen[-1].body.decode()
    # Another conversation holding the same token is asked (and times out to block).
    blocked = None
    try:
        in_conversation(gate, "other", first)
    except anthropic.BadRequestError as exc:
        blocked = exc
    assert blocked is not None and "nobody answered in time" in str(blocked)
