"""Real agent CLIs through `gate run --forward`: proxy and CA from the environment only.

Each agent names its provider's real host (api.anthropic.com, api.openai.com, ...); gate
decrypts it with its own CA and delivers to the loopback fake (`--upstream NAME=fake`). The
egress policy is `block`, so whatever else an agent tries is refused and recorded, never
sent: nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import replace
from pathlib import Path

import pytest
from fake_ws_models import FakeWsModels

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


def test_codex_built_in_provider_over_websocket(gate_dirs: dict[str, Path]) -> None:
    """Codex's own provider, as a user runs it: Responses over wss://api.openai.com."""
    out = check(case("codex", "exec-command"), gate_dirs, forward=True, fake=FakeWsModels())
    assert out.models.seen and all(s.method == "WS" for s in out.models.seen)


assert all(any((c.agent, c.name) == f for c in CASES) for f in _FORWARD)



def _claude_subscription() -> dict[str, str]:
    """A fake claude.ai sign-in, as `claude /login` leaves it (tokens valid for an hour)."""
    oauth = {"accessToken": "sk-ant-oat01-fake-" + os.urandom(12).hex(),
             "refreshToken": "sk-ant-ort01-fake-" + os.urandom(12).hex(),
             "expiresAt": int(time.time() * 1000) + 3_600_000,
             "scopes": ["user:inference", "user:profile"], "subscriptionType": "pro"}
    return {".claude/.credentials.json": json.dumps({"claudeAiOauth": oauth})}


@pytest.mark.parametrize("forward", [True, False], ids=["forward", "reverse"])
def test_claude_code_signed_in_with_a_subscription(forward: bool,
                                                   gate_dirs: dict[str, Path]) -> None:
    """No API key: Claude Code sends its claude.ai OAuth token, to api.anthropic.com in
    forward mode and to ANTHROPIC_BASE_URL (gate's /anthropic) in reverse mode."""
    base = case("claude-code", "read-and-bash")
    quiet = {k: v for k, v in base.env().items() if k != "ANTHROPIC_API_KEY"}
    c = replace(base, env=lambda: dict(quiet), home=_claude_subscription())
    out = check(c, gate_dirs, forward=forward)
    bodies = [s for s in out.models.seen if s.body]
    assert all(s.headers.get("authorization", "").startswith("Bearer sk-ant-oat01-fake-")
               for s in bodies), [sorted(s.headers) for s in bodies]
