"""Rule files reload when they change; a file that breaks keeps its last good rules."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gate.errors import RuleError
from gate.rules.layers import PolicyStore


def _write(path: Path, text: str, stamp: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (stamp, stamp))  # a different mtime, whatever the clock's resolution


def _texts(store: PolicyStore, root: Path) -> list[str]:
    return [r.text for r in store.policy_for(str(root)).rules if r.layer != "pack"]


@pytest.mark.parametrize("broken", [
    "deny:\n  - Read(./b\n",          # not a rule
    "deny:\n  - [Read(./b)\n",        # not YAML
    "# emptied by mistake\n",         # no rule at all
    "deny:\n  - Read(./b)\nbogus: 1\n",
])
def test_a_project_file_that_breaks_keeps_its_previous_rules(
        gate_dirs: dict[str, Path], log_lines: list[str], broken: str) -> None:
    root = gate_dirs["project"]
    team = root / ".gate" / "rules.yaml"
    _write(team, "deny:\n  - Read(./a)\n", 1)
    store = PolicyStore()
    assert _texts(store, root) == ["Read(./a)"]
    _write(team, broken, 2)
    assert _texts(store, root) == ["Read(./a)"]  # not blocked, not opened
    (warning,) = [line for line in log_lines if "previous rules" in line]
    assert warning.startswith("WARNING .gate/rules.yaml")
    assert "gate keeps this file's previous rules until it is fixed" in warning
    for _ in range(3):
        store.policy_for(str(root))
    assert sum("previous rules" in line for line in log_lines) == 1  # said once
    _write(team, "deny:\n  - Read(./c)\n", 3)
    assert _texts(store, root) == ["Read(./c)"]
    assert not store.policy_for(str(root)).warnings


def test_the_warning_names_the_line(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    team = root / ".gate" / "rules.yaml"
    _write(team, "deny:\n  - Read(./a)\n", 1)
    store = PolicyStore()
    store.policy_for(str(root))
    _write(team, "deny:\n  - Read(./a)\n  - Bash(curl\n", 2)
    (warning,) = store.policy_for(str(root)).warnings
    assert warning.startswith(".gate/rules.yaml:3: 'Bash(curl' is not a rule")


def test_a_file_that_was_never_valid_blocks(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    _write(root / ".gate" / "rules.yaml", "deny:\n  - Read(./a\n", 1)
    store = PolicyStore()
    with pytest.raises(RuleError) as info:
        store.policy_for(str(root))
    assert info.value.where == ".gate/rules.yaml:2"
    with pytest.raises(RuleError):  # and again, until it is fixed
        store.policy_for(str(root))


def test_a_user_file_that_breaks_after_start_keeps_its_rules(
        gate_dirs: dict[str, Path]) -> None:
    user = gate_dirs["config"] / "rules.yaml"
    _write(user, "deny:\n  - Read(~/notes/**)\n", 1)
    store = PolicyStore()
    _write(user, "deny: [\n", 2)
    assert "Read(~/notes/**)" in _texts(store, gate_dirs["project"])
    assert "Read(~/notes/**)" in [r.text for r in store.policy_for(None).rules]


def test_a_removed_file_takes_its_rules_with_it(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    team = root / ".gate" / "rules.yaml"
    _write(team, "deny:\n  - Read(./a)\n", 1)
    store = PolicyStore()
    assert _texts(store, root) == ["Read(./a)"]
    team.unlink()
    assert _texts(store, root) == []


def test_claude_settings_that_break_keep_their_previous_rules(
        gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    settings = root / ".claude" / "settings.json"
    _write(settings, json.dumps({"permissions": {"deny": ["Bash(scp *)"]}}), 1)
    store = PolicyStore()
    assert _texts(store, root) == ["Bash(scp *)"]
    _write(settings, '{"permissions": {"deny": ["Bash(scp *)",]}}', 2)
    policy = store.policy_for(str(root))
    assert [r.text for r in policy.rules if r.layer == "claude-project"] == ["Bash(scp *)"]
    (warning,) = policy.warnings
    assert warning.startswith(".claude/settings.json:1: not valid JSON")
    assert "previous rules" in warning
