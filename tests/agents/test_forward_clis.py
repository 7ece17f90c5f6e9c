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
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from agents.test_gemini_cli import signed_in
from fake_ws_models import FakeWsModels
from google_signin import HOSTS, answers

from agent_clis import CASES, case, fake_key
from agent_run import assert_audited, assert_never_sent, check, run_through_gate
from fake_models import FakeModels
from gemini_upstream import FakeGemini
from loopback import LoopbackServer

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]

_FORWARD = [
    ("claude-code", "read-and-bash"),
    ("opencode", "anthropic"),
    ("opencode", "openai"),
    ("opencode", "google"),
    ("gemini-cli", "read-and-shell"),
    ("copilot", "completions"),
    ("copilot", "responses"),
]


@pytest.mark.parametrize(("agent", "name"), _FORWARD, ids=[f"{a}-{n}" for a, n in _FORWARD])
def test_forward_mode_withholds_env(agent: str, name: str, gate_dirs: dict[str, Path]) -> None:
    out = check(case(agent, name), gate_dirs, forward=True)
    assert out.models.seen


def test_codex_custom_provider_over_http(gate_dirs: dict[str, Path]) -> None:
    """Codex with a provider of the user's own on api.openai.com, WebSockets off."""
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
    check(c, gate_dirs, forward=True, argv=argv)


def test_codex_built_in_provider_over_websocket(gate_dirs: dict[str, Path]) -> None:
    """Codex's own provider, as a user runs it: Responses over wss://api.openai.com. It
    also asks chatgpt.com for its model list: the fake answers that too (gate forwarded it
    to the real host, and Codex retried for ~6 s where the name does not resolve)."""
    out = check(
        case("codex", "exec-command"),
        gate_dirs,
        forward=True,
        fake=FakeWsModels(),
        also=("chatgpt",),
    )
    assert out.models.seen and all(s.method == "WS" for s in out.models.seen)


assert all(any((c.agent, c.name) == f for c in CASES) for f in _FORWARD)


def _claude_subscription() -> dict[str, str]:
    """A fake claude.ai sign-in, as `claude /login` leaves it (tokens valid for an hour)."""
    oauth = {
        "accessToken": "sk-ant-oat01-fake-" + os.urandom(12).hex(),
        "refreshToken": "sk-ant-ort01-fake-" + os.urandom(12).hex(),
        "expiresAt": int(time.time() * 1000) + 3_600_000,
        "scopes": ["user:inference", "user:profile"],
        "subscriptionType": "pro",
    }
    return {".claude/.credentials.json": json.dumps({"claudeAiOauth": oauth})}


@pytest.mark.parametrize("forward", [True, False], ids=["forward", "reverse"])
def test_claude_code_signed_in_with_a_subscription(
    forward: bool, gate_dirs: dict[str, Path]
) -> None:
    """No API key: Claude Code sends its claude.ai OAuth token, to api.anthropic.com in
    forward mode and to ANTHROPIC_BASE_URL (gate's /anthropic) in reverse mode."""
    base = case("claude-code", "read-and-bash")
    quiet = {k: v for k, v in base.env().items() if k != "ANTHROPIC_API_KEY"}
    c = replace(base, env=lambda: dict(quiet), home=_claude_subscription())
    out = check(c, gate_dirs, forward=forward)
    bodies = [s for s in out.models.seen if s.body]
    assert all(
        s.headers.get("authorization", "").startswith("Bearer sk-ant-oat01-fake-") for s in bodies
    ), [sorted(s.headers) for s in bodies]


class JsonAnswers(LoopbackServer):
    """Sign-in and account endpoints (path → JSON) as plain HTTP on loopback: gate delivers
    their hosts here (`--upstream HOST=URL`)."""

    def __init__(self, table: dict[str, object]) -> None:
        self.asked: list[str] = []
        asked = self.asked

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _answer(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                path = self.path.split("?", 1)[0].lstrip("/")
                asked.append(f"{self.command} {path}")
                body = json.dumps(table.get(path, {"error": "not_found"})).encode()
                self.send_response(200 if path in table else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST = _answer

        self.serve(Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def test_gemini_cli_signed_in_with_google(gate_dirs: dict[str, Path]) -> None:
    """Google sign-in: Code Assist screened; the token check goes to Google's host, which
    `--upstream oauth2.googleapis.com=URL` delivers to a loopback fake."""
    token = "ya29.fake-" + os.urandom(16).hex()
    refreshed = "ya29.refreshed-" + os.urandom(8).hex()
    google = JsonAnswers({k.split("/", 1)[1]: v for k, v in answers(refreshed).items()})
    hosts = tuple(f"{h}={google.url}" for h in HOSTS)
    try:
        out = run_through_gate(
            signed_in(token, 365 * 86400.0, True),
            gate_dirs,
            forward=True,
            fake=FakeGemini(),
            extra=hosts,
        )
    finally:
        google.stop()
    # The model's turns are checked as every agent's are; the setup calls carry no content.
    assert not any(out.secret.encode() in s.body for s in out.models.seen)
    assert_never_sent(
        replace(
            out,
            models=FakeGemini(
                seen=[s for s in out.models.seen if ":streamGenerateContent" in s.path]
            ),
        )
    )
    assert_audited(out, gate_dirs, dict(os.environ))
    assert "POST tokeninfo" in google.asked, google.asked
    methods = {s.path.split("?")[0].rsplit(":", 1)[-1] for s in out.models.seen}
    assert {"loadCodeAssist", "streamGenerateContent"} <= methods, methods
    assert all(s.headers.get("authorization") == f"Bearer {token}" for s in out.models.seen)


# What Copilot's model list says of a model it may use (the fields it was seen to need).
_COPILOT_MODEL = {
    "id": "gpt-5",
    "name": "GPT-5",
    "vendor": "OpenAI",
    "version": "gpt-5",
    "object": "model",
    "model_picker_enabled": True,
    "preview": False,
    "is_chat_default": True,
    "capabilities": {
        "family": "gpt-5",
        "type": "chat",
        "object": "model_capabilities",
        "tokenizer": "o200k_base",
        "limits": {
            "max_context_window_tokens": 128000,
            "max_output_tokens": 16384,
            "max_prompt_tokens": 128000,
        },
        "supports": {"streaming": True, "tool_calls": True, "parallel_tool_calls": True},
    },
    "policy": {"state": "enabled", "terms": ""},
    "supported_endpoints": ["/chat/completions"],
}


def test_copilot_cli_signed_in_with_github(gate_dirs: dict[str, Path]) -> None:
    """Copilot's own GitHub sign-in (no provider of your own): its account calls on
    api.github.com go to a loopback fake; the models on api.individual.githubcopilot.com
    are screened."""
    token = fake_key("gho_")
    c = replace(
        case("copilot", "completions"),
        inherit=None,
        upstream="github-copilot",
        env=lambda: {"COPILOT_GITHUB_TOKEN": token, "COPILOT_MODEL": "gpt-5"},
    )
    github = JsonAnswers(
        {
            "copilot_internal/user": {
                "login": "gate-test",
                "copilot_plan": "individual",
                "chat_enabled": True,
                "endpoints": {"api": "https://api.individual.githubcopilot.com"},
            },
            "user": {"login": "gate-test", "id": 1},
        }
    )
    try:
        out = run_through_gate(
            c,
            gate_dirs,
            forward=True,
            fake=FakeModels(model_list=[_COPILOT_MODEL]),
            extra=(f"api.github.com={github.url}",),
        )
    finally:
        github.stop()
    assert "GET copilot_internal/user" in github.asked
    # Its GitHub MCP calls (api…/mcp/readonly) are screened as JSON of no model format.
    assert not any(out.secret.encode() in s.body for s in out.models.seen)
    chats = [s for s in out.models.seen if s.path == "/chat/completions"]
    assert_never_sent(replace(out, models=FakeModels(seen=chats)))
    assert_audited(out, gate_dirs, dict(os.environ))
    assert chats and all(s.headers.get("authorization") == f"Bearer {token}" for s in chats)
