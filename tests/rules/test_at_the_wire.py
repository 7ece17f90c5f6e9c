"""The new rule kinds withhold tool results in a real request body, as deny rules do."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gate.rules.layers import PolicyStore
from gate.screen.request import Outbound, screen
from messages import conversation, tool_turn

RULES = (
    "deny:\n  - Bash(curl *)\n  - WebFetch(domain:*.evil.test)\n  - mcp__prod_db\n"
    "ask:\n  - Bash(git push:*)\n"
)


@pytest.mark.parametrize(
    ("name", "tool_input", "rule", "target"),
    [
        (
            "Bash",
            {"command": "cd /tmp && timeout 5 curl -s http://x"},
            "Bash(curl *)",
            "cd /tmp && timeout 5 curl -s http://x",
        ),
        ("Bash", {"command": "git add . && git push"}, "Bash(git push:*)", "git add . && git push"),
        (
            "WebFetch",
            {"url": "https://a.evil.test/x", "prompt": "p"},
            "WebFetch(domain:*.evil.test)",
            "https://a.evil.test/x",
        ),
        ("mcp__prod_db__query", {"sql": "select 1"}, "mcp__prod_db", None),
    ],
)
def test_result_is_withheld(
    gate_dirs: dict[str, Path],
    name: str,
    tool_input: dict[str, object],
    rule: str,
    target: str | None,
) -> None:
    root = gate_dirs["project"]
    (root / ".gate").mkdir()
    (root / ".gate" / "rules.yaml").write_text(RULES)
    secret = "the-output-" + name
    body = conversation(str(root), tool_turn("t1", name, tool_input, secret))
    req = Outbound(
        path="/v1/messages",
        body=json.dumps(body).encode(),
        agent="claude-code",
        project_root=str(root),
    )
    verdict = screen(req, PolicyStore())
    assert verdict.body is not None and secret.encode() not in verdict.body
    (withheld,) = verdict.withheld
    assert (withheld.rule, withheld.where.split(":")[0]) == (rule, ".gate/rules.yaml")
    assert withheld.target == target
    assert f"rule {rule} (.gate/rules.yaml:" in json.dumps(json.loads(verdict.body))


def test_an_allowed_command_leaves_untouched(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    (root / ".gate").mkdir()
    (root / ".gate" / "rules.yaml").write_text(RULES + "allow:\n  - Bash(ls *)\n")
    body = conversation(str(root), tool_turn("t1", "Bash", {"command": "ls -la"}, "a b c"))
    req = Outbound(
        path="/v1/messages",
        body=json.dumps(body).encode(),
        agent="claude-code",
        project_root=str(root),
    )
    assert screen(req, PolicyStore()).body is None
