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


@pytest.mark.parametrize(
    "broken",
    [
        "deny:\n  - Read(./b\n",  # not a rule
        "deny:\n  - [Read(./b)\n",  # not YAML
        "# emptied by mistake\n",  # no rule at all
        "deny:\n  - Read(./b)\nbogus: 1\n",
    ],
)
def test_a_project_file_that_breaks_keeps_its_previous_rules(
    gate_dirs: dict[str, Path], log_lines: list[str], broken: str
) -> None:
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
    _write(team, "deny:\n  - Read(./a)\n  - Read(./c)\n", 3)
    assert _texts(store, root) == ["Read(./a)", "Read(./c)"]
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


def test_a_user_file_that_breaks_after_start_keeps_its_rules(gate_dirs: dict[str, Path]) -> None:
    user = gate_dirs["config"] / "rules.yaml"
    _write(user, "deny:\n  - Read(~/notes/**)\n", 1)
    store = PolicyStore()
    _write(user, "deny: [\n", 2)
    assert "Read(~/notes/**)" in _texts(store, gate_dirs["project"])
    assert "Read(~/notes/**)" in [r.text for r in store.policy_for(None).rules]


def test_a_removed_file_keeps_its_rules_until_a_person_confirms(
    gate_dirs: dict[str, Path],
) -> None:
    root = gate_dirs["project"]
    team = root / ".gate" / "rules.yaml"
    _write(team, "deny:\n  - Read(./a)\n", 1)
    store = PolicyStore()
    assert _texts(store, root) == ["Read(./a)"]
    team.unlink()
    assert _texts(store, root) == ["Read(./a)"]
    assert any("until a person confirms" in w for w in store.policy_for(str(root)).warnings)
    [held] = store.loosenings()
    assert store.confirm(held, approve=True)
    assert _texts(store, root) == []
    assert _texts(PolicyStore(), root) == []  # a restart reads the files as they are


def test_claude_settings_that_break_keep_their_previous_rules(gate_dirs: dict[str, Path]) -> None:
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


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("deny:\n  - Read(./a)\n", "allow:\n  - Read(./a)\n"),  # turned into an allow
        ("deny:\n  - Read(./a)\n", "ask:\n  - Read(./a)\n"),  # deny weakened to ask
        (
            "deny:\n  - Read(./a)\n",
            "deny:\n  - rule: Read(./a)\n    unless: ['./a']\n",
        ),  # an exception added
        ("ask:\n  - Bash(curl *)\n", "deny:\n  - Read(./z)\n"),  # replaced by another
    ],
)
def test_a_rule_file_cannot_be_loosened_while_gate_runs(
    gate_dirs: dict[str, Path], log_lines: list[str], before: str, after: str
) -> None:
    root = gate_dirs["project"]
    team = root / ".gate" / "rules.yaml"
    _write(team, before, 1)
    store = PolicyStore()
    old = {(r.effect, r.text) for r in store.policy_for(str(root)).rules if r.layer != "pack"}
    _write(team, after, 2)
    policy = store.policy_for(str(root))
    now = {(r.effect, r.text) for r in policy.rules if r.layer != "pack"}
    assert old <= now  # every deny and ask rule still in force
    assert any("stays in force until a person confirms the change" in w for w in policy.warnings)
    assert any("stays in force until a person confirms the change" in line for line in log_lines)


def test_claude_settings_cannot_be_loosened_while_gate_runs(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    settings = root / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"deny": ["Read(./x)", "Bash(curl *)"]}}))
    store = PolicyStore()
    assert {"Read(./x)", "Bash(curl *)"} <= set(_texts(store, root))
    # The agent rewrites its own settings: one rule dropped, one made invalid.
    settings.write_text(json.dumps({"permissions": {"deny": [42, "Bash(curl *)"]}}))
    os.utime(settings, (5, 5))
    assert {"Read(./x)", "Bash(curl *)"} <= set(_texts(store, root))
    assert {"Read(./x)", "Bash(curl *)"} - set(_texts(PolicyStore(), root)) == {"Read(./x)"}


def test_the_default_pack_asks_before_edits_of_what_polices_the_agent(
    gate_dirs: dict[str, Path],
) -> None:
    from gate.agents import tools
    from gate.rules.model import Effect

    root = str(gate_dirs["project"])
    policy = PolicyStore().policy_for(root)
    home = gate_dirs["home"]
    for tool, path in [
        ("Write", f"{root}/.gate/rules.yaml"),
        ("Edit", ".claude/settings.json"),
        ("Edit", f"{root}/.claude/settings.local.json"),
        ("Write", f"{home}/.config/gate/config.yaml"),
        ("Edit", f"{home}/.local/share/gate/audit.db"),
    ]:
        decision = policy.decide(tools.action(tool, {"file_path": path}, root), root)
        assert decision.effect is Effect.ASK, (tool, path)
    readme = tools.action("Edit", {"file_path": "README.md"}, root)
    assert policy.decide(readme, root).effect is None


# (which file, before, after, the action now, whether held as a loosening, after a restart)
@pytest.mark.parametrize(
    ("layer", "before", "after", "action", "held", "restarted"),
    [
        ("user", "high: block", "high: allow", "block", True, "allow"),
        ("user", "high: block", "high: block\n  github-token: allow", "block", True, "allow"),
        ("user", "github-token: block", "low: redact", "block", True, "ask"),  # removed
        ("project", "github-token: block", "high: ask", "block", True, "ask"),
        ("user", "high: redact", "high: block", "block", False, "block"),  # tightening: at once
        ("project", "high: ask", "high: ask\n  github.token: block", "block", False, "block"),
    ],
)
def test_the_secrets_policy_cannot_be_loosened_while_gate_runs(
    gate_dirs: dict[str, Path],
    layer: str,
    before: str,
    after: str,
    action: str,
    held: bool,
    restarted: str,
) -> None:
    root = gate_dirs["project"]
    path = (
        gate_dirs["config"] / "rules.yaml"
        if layer == "user"
        else root / ".gate" / "rules.local.yaml"
    )
    _write(path, f"secrets:\n  {before}\n", 1)
    store = PolicyStore()
    store.policy_for(str(root))
    _write(path, f"secrets:\n  {after}\n", 2)
    policy = store.policy_for(str(root))
    assert policy.secret_action("github-token", "github.token", "high") == action
    assert any("secrets: settings loosened" in w for w in policy.warnings) is held
    fresh = PolicyStore().policy_for(str(root))  # a restart: the file says what applies
    assert fresh.secret_action("github-token", "github.token", "high") == restarted
