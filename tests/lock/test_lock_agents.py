"""Every real agent CLI `gate run` knows, under `gate run --lock`: each finishes its task
through the lock, the `.env` value never reaching the loopback fake provider. Forward mode
(the lock's default) for the agents that take a proxy from the environment; --reverse
(base URLs) for every agent, Aider included."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_ws_models import FakeWsModels

from agent_clis import CASES, Case, case
from agent_run import check

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]

# The cases tests/agents/test_forward_clis.py runs through `gate run --forward`.
FORWARD = [
    ("claude-code", "read-and-bash"),
    ("opencode", "anthropic"),
    ("opencode", "openai"),
    ("opencode", "google"),
    ("gemini-cli", "read-and-shell"),
    ("copilot", "completions"),
    ("copilot", "responses"),
]


@pytest.mark.parametrize(("agent", "name"), FORWARD, ids=[f"{a}-{n}" for a, n in FORWARD])
def test_agent_cli_works_locked_in_forward_mode(
    agent: str, name: str, gate_dirs: dict[str, Path]
) -> None:
    out = check(case(agent, name), gate_dirs, forward=True, lock=True)
    assert out.tried_outside == [], out.tried_outside  # the host's black hole: unreachable


def test_codex_works_locked_in_forward_mode(gate_dirs: dict[str, Path]) -> None:
    c = case("codex", "exec-command")
    provider = (
        '{name="mine",base_url="https://api.openai.com/v1",wire_api="responses",'
        'env_key="CODEX_API_KEY",supports_websockets=false}'
    )
    argv = [
        "-c",
        f"model_providers.mine={provider}",
        "-c",
        "model_provider=mine",
        *c.argv("Show me what is in .env"),
    ]
    check(c, gate_dirs, forward=True, argv=argv, lock=True)


def test_codex_built_in_provider_works_locked_over_websocket(gate_dirs: dict[str, Path]) -> None:
    out = check(
        case("codex", "exec-command"),
        gate_dirs,
        forward=True,
        fake=FakeWsModels(),
        lock=True,
        also=("chatgpt",),  # its model list, as in tests/agents/test_forward_clis.py
    )
    assert out.models.seen and all(s.method == "WS" for s in out.models.seen)


@pytest.mark.parametrize("c", CASES, ids=[f"{c.agent}-{c.name}" for c in CASES])
def test_agent_cli_works_locked_in_reverse_mode(c: Case, gate_dirs: dict[str, Path]) -> None:
    out = check(c, gate_dirs, lock=True)
    assert out.tried_outside == [], out.tried_outside
