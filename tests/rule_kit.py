"""Factories for rule tests: a policy from YAML text, a tool call as an action."""

from __future__ import annotations

import json
from typing import Any

from gate.agents import tools
from gate.agents.actions import Action
from gate.rules.engine import Policy
from gate.rules.loader import load_text
from gate.rules.model import Effect

ROOT = "/work/proj"


def policy_of(text: str, *, root: str | None = ROOT) -> Policy:
    return Policy(rules=tuple(load_text(text, "t.yaml", root=root)))


def one_rule(effect: Effect, rule: str) -> Policy:
    return policy_of(f"{effect.value}:\n  - {json.dumps(rule)}\n")


def call(tool: str, cwd: str = ROOT, **tool_input: Any) -> Action:
    return tools.action(tool, tool_input, cwd)
