"""Rules by tool name: MCP servers and tools, tool-name globs, and Tool(param:value)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gate.errors import RuleError
from gate.rules.loader import load_text
from gate.rules.model import Effect, Kind
from gate.rules.names import params_of
from rule_kit import ROOT, call, one_rule


@pytest.mark.parametrize(
    ("rule", "tool", "hit"),
    [
        ("mcp__github", "mcp__github__get_issue", True),  # every tool of the server
        ("mcp__github", "mcp__github__create_pull_request", True),
        ("mcp__github", "mcp__githubx__get_issue", False),
        ("mcp__github", "mcp__gitlab__get_issue", False),
        ("mcp__github__*", "mcp__github__create_pull_request", True),
        ("mcp__github__*", "mcp__github_enterprise__get_issue", False),
        ("mcp__github__get_issue", "mcp__github__get_issue", True),
        ("mcp__github__get_issue", "mcp__github__get_issues", False),
        ("mcp__github__get_*", "mcp__github__get_issue", True),
        ("mcp__github__get_*", "mcp__github__create_issue", False),
        ("mcp__claude_ai_Drive", "mcp__claude_ai_Drive__search", True),  # connectors
        ("mcp__*", "mcp__slack__post_message", True),
        ("mcp__*", "Bash", False),
        ("*", "mcp__slack__post_message", True),
        ("*", "Bash", True),
        ("Grep", "Grep", True),  # a bare name is that tool
        ("Grep", "grep", False),
        ("TodoWrite", "TodoWrite", True),
    ],
)
def test_tool_names(rule: str, tool: str, hit: bool) -> None:
    policy = one_rule(Effect.DENY, rule)
    assert (policy.decide(call(tool), ROOT).effect is Effect.DENY) is hit


def test_a_name_glob_withholds_any_verb() -> None:
    policy = one_rule(Effect.ASK, "*")
    assert policy.decide(call("Bash", command="ls"), ROOT).effect is Effect.ASK
    assert policy.decide(call("Read", file_path=f"{ROOT}/a"), ROOT).effect is Effect.ASK


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("allow:\n  - mcp__*\n", "mcp__<server>__"),
        ("allow:\n  - '*'\n", "mcp__<server>__"),
        ("allow:\n  - mcp__git*\n", "mcp__<server>__"),
        ("deny:\n  - mcp__github__*(x)\n", "takes no specifier"),
    ],
)
def test_bad_name_rules(text: str, words: str) -> None:
    with pytest.raises(RuleError) as info:
        load_text(text, "t.yaml")
    assert info.value.where == "t.yaml:2"
    assert words in info.value.diagnostics()


def test_an_allow_glob_with_a_server_prefix_loads() -> None:
    (rule,) = load_text("allow:\n  - mcp__github__get_*\n", "t.yaml")
    assert rule.kind is Kind.NAME and rule.unenforced is None


@pytest.mark.parametrize(
    ("rule", "tool", "tool_input", "hit"),
    [
        ("Agent(model:opus)", "Agent", {"model": "opus", "prompt": "x"}, True),
        ("Agent(model:opus)", "Agent", {"model": "sonnet"}, False),
        ("Agent(model:op*)", "Agent", {"model": "opus-4"}, True),
        ("Agent(model:opus)", "Task", {"model": "opus"}, False),
        (
            "Bash(run_in_background:true)",
            "Bash",
            {"command": "make", "run_in_background": True},
            True,
        ),
        ("Bash(run_in_background:true)", "Bash", {"command": "make"}, False),
        (
            "Bash(run_in_background:true)",
            "run_shell_command",
            {"command": "make", "run_in_background": True},
            True,
        ),
        ("mcp__db__query(database:prod)", "mcp__db__query", {"database": "prod"}, True),
        ("mcp__db(database:prod)", "mcp__db__query", {"database": "prod"}, True),
        ("mcp__db(database:prod)", "mcp__db__query", {"database": "staging"}, False),
    ],
)
def test_param_rules(rule: str, tool: str, tool_input: dict[str, object], hit: bool) -> None:
    policy = one_rule(Effect.DENY, rule)
    action = replace(call(tool, **tool_input), params=params_of(tool_input))
    assert (policy.decide(action, ROOT).effect is Effect.DENY) is hit
    # Tool calls reach the engine with their short inputs, so the rule holds at the wire.
    assert (policy.decide(call(tool, **tool_input), ROOT).effect is Effect.DENY) is hit
    assert policy.rules[0].kind is Kind.PARAM and not policy.rules[0].unenforced


@pytest.mark.parametrize("rule", ["WebFetch(url:https://x)", "Grep(path:/etc)", "Agent(command:x)"])
def test_a_param_rule_cannot_target_the_main_input(rule: str) -> None:
    with pytest.raises(RuleError, match="main input"):
        load_text(f"deny:\n  - {rule}\n", "t.yaml")


def test_params_are_json_spelled() -> None:
    assert params_of({"a": True, "b": None, "c": 3, "d": "x", "e": [1], "f": {}}) == (
        ("a", "true"),
        ("b", "null"),
        ("c", "3"),
        ("d", "x"),
    )
