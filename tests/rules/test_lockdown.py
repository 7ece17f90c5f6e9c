"""A managed `lockdown: true`: allow rules of every other layer are set aside."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.errors import RuleError
from gate.rules.layers import PolicyStore
from gate.rules.model import Effect
from rule_kit import call


@pytest.fixture
def managed() -> Path:
    return Path(os.environ["GATE_MANAGED_RULES"])


def _project(root: Path, text: str) -> None:
    (root / ".gate").mkdir(exist_ok=True)
    (root / ".gate" / "rules.yaml").write_text(text)


def test_lockdown_ignores_allow_rules_of_other_layers(
    gate_dirs: dict[str, Path], managed: Path
) -> None:
    root = gate_dirs["project"]
    managed.write_text("lockdown: true\nallow:\n  - Bash(git status)\n")
    _project(root, "allow:\n  - Bash(ls *)\n  - Bash(git status)\ndeny:\n  - Bash(curl *)\n")
    policy = PolicyStore().policy_for(str(root))
    assert policy.lockdown
    assert [(r.text, r.where) for r in policy.ignored] == [
        ("Bash(ls *)", ".gate/rules.yaml:2"),
        ("Bash(git status)", ".gate/rules.yaml:3"),
    ]

    def effect(command: str) -> Effect | None:
        return policy.decide(call("Bash", str(root), command=command), str(root)).effect

    assert effect("ls -la") is None  # the project's allow no longer counts
    decision = policy.decide(call("Bash", str(root), command="git status"), str(root))
    assert decision.effect is Effect.ALLOW and decision.rule is not None
    assert decision.rule.layer == "managed"  # the organisation's allow does
    assert effect("curl x") is Effect.DENY  # deny and ask rules of every layer still apply


def test_without_lockdown_every_allow_counts(gate_dirs: dict[str, Path], managed: Path) -> None:
    root = gate_dirs["project"]
    managed.write_text("lockdown: false\ndeny:\n  - Bash(scp *)\n")
    _project(root, "allow:\n  - Bash(ls *)\n")
    policy = PolicyStore().policy_for(str(root))
    assert not policy.lockdown and not policy.ignored
    assert policy.decide(call("Bash", str(root), command="ls"), str(root)).effect is Effect.ALLOW


def test_a_managed_file_may_hold_only_lockdown(managed: Path) -> None:
    managed.write_text("lockdown: true\n")
    assert PolicyStore().policy_for(None).lockdown


@pytest.mark.parametrize(
    ("where", "text", "words"),
    [
        ("project", "deny:\n  - Read(./a)\nlockdown: true\n", "managed rule file only"),
        ("managed", "lockdown: yes please\n", "lockdown: must be true or false"),
    ],
)
def test_bad_lockdown(
    gate_dirs: dict[str, Path], managed: Path, where: str, text: str, words: str
) -> None:
    root = gate_dirs["project"]
    if where == "project":
        _project(root, text)
    else:
        managed.write_text(text)
    with pytest.raises(RuleError) as info:
        PolicyStore().policy_for(str(root))
    assert words in info.value.message
    assert info.value.where is not None and info.value.where.endswith(
        ":3" if where == "project" else ":1"
    )
