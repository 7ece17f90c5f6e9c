"""Agent detection and the base URLs `gate run` inherits from the environment."""

from __future__ import annotations

import json
import tomllib

import pytest

from gate.agents import registry


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["claude"], "claude-code"),
        (["/usr/local/bin/claude", "-p", "x"], "claude-code"),
        (["C:/tools/claude.exe"], "claude-code"),
        (["python", "claude"], "generic"),
        ([], "generic"),
    ],
)
def test_detect(argv: list[str], name: str) -> None:
    assert registry.detect(argv).name == name


@pytest.mark.parametrize(
    ("name", "agent"),
    [("claude-code", "claude-code"), ("claude", "claude-code"), ("gemini", "gemini-cli")],
)
def test_get_takes_the_name_or_the_command(name: str, agent: str) -> None:
    assert registry.get(name).name == agent


def test_get_names_the_known_agents_for_an_unknown_one() -> None:
    with pytest.raises(ValueError, match=r"unknown agent 'clod'; known agents: aider, claude-code"):
        registry.get("clod")


def test_inherited_upstreams() -> None:
    generic = registry.get("generic")
    env = {
        "ANTHROPIC_BASE_URL": "https://llm.corp.example/anthropic/",
        "OPENAI_BASE_URL": "https://llm.corp.example/openai/v1",
        "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:4000/gemini",
    }
    assert registry.inherited_upstreams(generic, env) == {
        "anthropic": ("ANTHROPIC_BASE_URL", "https://llm.corp.example/anthropic"),
        "openai": ("OPENAI_BASE_URL", "https://llm.corp.example/openai"),
        "gemini": ("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:4000/gemini"),
    }
    with pytest.raises(ValueError, match="does not end in /v1"):
        registry.inherited_upstreams(generic, {"OPENAI_BASE_URL": "https://corp/openai"})
    assert registry.inherited_upstreams(registry.get("claude-code"), {}) == {}


@pytest.mark.parametrize(
    ("argv", "name"),
    [
        (["codex", "exec", "hi"], "codex"),
        (["/usr/bin/opencode", "run"], "opencode"),
        (["gemini", "-p", "x"], "gemini-cli"),
        (["copilot"], "copilot"),
        (["/tmp/venv/bin/aider", "--message", "x"], "aider"),
    ],
)
def test_detect_every_agent(argv: list[str], name: str) -> None:
    assert registry.detect(argv).name == name


@pytest.mark.parametrize(
    ("user_agent", "name"),
    [
        ("claude-cli/2.1.197 (external, sdk-cli)", "claude-code"),
        ("codex_exec/0.171.0 (Debian 12.0.0; x86_64) xterm (codex_exec; 0.171.0)", "codex"),
        ("codex_cli_rs/0.171.0 (Mac OS 15.1.0; arm64)", "codex"),
        ("opencode/1.18.33 ai-sdk/provider-utils/4.0.46 runtime/bun/1.3.14", "opencode"),
        ("GeminiCLI-tui/0.61.0/gemini-2.5-pro (linux; x64; terminal)", "gemini-cli"),
        ("OpenAI/JS 5.20.1", None),  # Copilot CLI's own-provider mode: the SDK's default
        ("OpenAI/Python 2.20.0", None),  # Aider (through LiteLLM)
    ],
)
def test_from_user_agent(user_agent: str, name: str | None) -> None:
    assert registry.from_user_agent(user_agent) == name


def test_codex_is_wired_by_flags_after_its_name() -> None:
    codex = registry.get("codex")
    base = "http://127.0.0.1:8787/_run/0123456789abcdef"
    argv = registry.command(codex, ["/bin/codex", "exec", "--json", "hi"], base)
    assert argv[0] == "/bin/codex" and argv[-3:] == ["exec", "--json", "hi"]
    flags = argv[1:-3]
    assert flags[::2] == ["-c", "-c"] and "model_provider=gate" in flags
    key, _, table = flags[1].partition("=")
    assert key == "model_providers.gate"
    provider = tomllib.loads(f"gate = {table}")["gate"]  # Codex parses -c values as TOML
    assert provider == {
        "name": "gate",
        "base_url": f"{base}/openai/v1",
        "wire_api": "responses",
        "requires_openai_auth": True,
    }
    assert codex.env(base) == {}
    # Agents wired by the environment get their command line unchanged.
    assert registry.command(registry.get("claude-code"), ["claude", "-p"], base) == ["claude", "-p"]
    assert registry.command(codex, [], base) == []


def test_opencode_gets_a_config_overlay_of_base_urls_only() -> None:
    env = registry.get("opencode").env("http://g")
    assert list(env) == ["OPENCODE_CONFIG_CONTENT"]
    overlay = json.loads(env["OPENCODE_CONFIG_CONTENT"])
    assert overlay == {
        "provider": {
            "anthropic": {"options": {"baseURL": "http://g/anthropic/v1"}},
            "openai": {"options": {"baseURL": "http://g/openai/v1"}},
            "google": {"options": {"baseURL": "http://g/gemini/v1beta"}},
        }
    }


@pytest.mark.parametrize(
    ("name", "routes"),
    [
        ("generic", {"anthropic", "openai", "gemini"}),
        ("claude-code", {"anthropic"}),
        ("codex", {"openai"}),
        ("opencode", {"anthropic", "openai", "gemini"}),
        ("gemini-cli", {"gemini", "code-assist"}),
        ("copilot", {"copilot"}),
        ("aider", {"anthropic", "openai", "gemini"}),
    ],
)
def test_routes(name: str, routes: set[str]) -> None:
    assert registry.routes(registry.get(name)) == routes


def test_copilot_forwards_to_the_provider_the_user_set() -> None:
    copilot = registry.get("copilot")
    env = {
        "COPILOT_PROVIDER_BASE_URL": "http://localhost:11434/v1/",
        "COPILOT_PROVIDER_TRANSPORT": "websockets",
    }  # not a base URL: ignored
    assert registry.inherited_upstreams(copilot, env) == {
        "copilot": ("COPILOT_PROVIDER_BASE_URL", "http://localhost:11434/v1")
    }
    assert copilot.env("http://g")["COPILOT_PROVIDER_TRANSPORT"] == "http"
    assert registry.inherited_upstreams(copilot, {}) == {}


def test_inherited_upstreams_ignore_values_that_are_not_base_urls() -> None:
    opencode = registry.get("opencode")
    assert registry.inherited_upstreams(opencode, {"OPENCODE_CONFIG_CONTENT": "{}"}) == {}


def test_aider_inherits_the_base_url_litellm_would_use() -> None:
    aider = registry.get("aider")
    env = {
        "OPENAI_API_BASE": "https://second.example/v1",
        "OPENAI_BASE_URL": "https://first.example/v1",
        "ANTHROPIC_API_BASE": "https://corp.example/anthropic",
    }
    assert registry.inherited_upstreams(aider, env) == {
        "openai": ("OPENAI_BASE_URL", "https://first.example"),
        "anthropic": ("ANTHROPIC_API_BASE", "https://corp.example/anthropic"),
    }
