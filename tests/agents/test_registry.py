"""Agent detection and the base URLs `gate run` inherits from the environment."""

from __future__ import annotations

import pytest

from gate.agents import registry


@pytest.mark.parametrize(("argv", "name"), [
    (["claude"], "claude-code"), (["/usr/local/bin/claude", "-p", "x"], "claude-code"),
    (["C:/tools/claude.exe"], "claude-code"), (["python", "claude"], "generic"), ([], "generic"),
])
def test_detect(argv: list[str], name: str) -> None:
    assert registry.detect(argv).name == name


def test_inherited_upstreams() -> None:
    generic = registry.get("generic")
    env = {"ANTHROPIC_BASE_URL": "https://llm.corp.example/anthropic/",
           "OPENAI_BASE_URL": "https://llm.corp.example/openai/v1",
           "GOOGLE_GEMINI_BASE_URL": "http://127.0.0.1:4000/gemini"}
    assert registry.inherited_upstreams(generic, env) == {
        "anthropic": ("ANTHROPIC_BASE_URL", "https://llm.corp.example/anthropic"),
        "openai": ("OPENAI_BASE_URL", "https://llm.corp.example/openai"),
        "gemini": ("GOOGLE_GEMINI_BASE_URL", "http://127.0.0.1:4000/gemini"),
    }
    with pytest.raises(ValueError, match="does not end in /v1"):
        registry.inherited_upstreams(generic, {"OPENAI_BASE_URL": "https://corp/openai"})
    assert registry.inherited_upstreams(registry.get("claude-code"), {}) == {}
