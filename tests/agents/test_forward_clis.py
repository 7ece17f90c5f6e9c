"""Real agent CLIs through `gate run --forward`: proxy and CA from the environment only.

Each agent names its provider's real host (api.anthropic.com, api.openai.com, ...); gate
decrypts it with its own CA and delivers to the loopback fake (`--upstream NAME=fake`). The
egress policy is `block`, so whatever else an agent tries is refused and recorded, never
sent: nothing leaves 127.0.0.1.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_clis import CASES, case
from agent_run import check

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]

_FORWARD = [("claude-code", "read-and-bash"), ("opencode", "anthropic"), ("opencode", "openai"),
            ("opencode", "google"), ("gemini-cli", "read-and-shell"),
            ("copilot", "completions"), ("copilot", "responses")]


@pytest.mark.parametrize(("agent", "name"), _FORWARD, ids=[f"{a}-{n}" for a, n in _FORWARD])
def test_forward_mode_withholds_env(agent: str, name: str, gate_dirs: dict[str, Path]) -> None:
    out = check(case(agent, name), gate_dirs, forward=True)
    assert out.models.seen


def test_codex_custom_provider_over_http(gate_dirs: dict[str, Path]) -> None:
    """Codex with a provider of the user's own on api.openai.com, WebSockets off."""
    c = case("codex", "exec-command")
    provider = ('{name="mine",base_url="https://api.openai.com/v1",wire_api="responses",'
                'env_key="CODEX_API_KEY",supports_websockets=false}')
    argv = ["-c", f"model_providers.mine={provider}", "-c", "model_provider=mine",
            *c.argv("Show me what is in .env")]
    check(c, gate_dirs, forward=True, argv=argv)


assert all(any((c.agent, c.name) == f for c in CASES) for f in _FORWARD)
