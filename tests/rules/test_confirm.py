"""A rule file loosened while gate runs is held until a person confirms it (PolicyStore)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.rules.held import LayerKey, Loosening
from gate.rules.layers import PolicyStore

RULES = "deny:\n  - Read(./a)\n  - Read(./b)\nask:\n  - Bash(curl *)\n"


def _write(path: Path, text: str, stamp: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    os.utime(path, (stamp, stamp))  # a different mtime, whatever the clock's resolution


class Told:
    """What the store says each changed file holds, in order."""

    def __init__(self, store: PolicyStore):
        self.news: list[tuple[LayerKey, Loosening | None]] = []
        store.on_loosen = lambda key, lo: self.news.append((key, lo))

    def last(self) -> Loosening | None:
        return self.news[-1][1]


@pytest.fixture
def team(gate_dirs: dict[str, Path]) -> Path:
    path = gate_dirs["project"] / ".gate" / "rules.yaml"
    _write(path, RULES, 1)
    return path


def _texts(store: PolicyStore, root: Path) -> set[str]:
    return {r.text for r in store.policy_for(str(root)).rules if r.layer != "pack"}


def test_approving_lets_the_change_take_effect(gate_dirs: dict[str, Path], team: Path) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    assert _texts(store, root) == {"Read(./a)", "Read(./b)", "Bash(curl *)"}
    _write(team, "deny:\n  - Read(./b)\nask:\n  - Bash(curl *)\n", 2)
    assert _texts(store, root) == {"Read(./a)", "Read(./b)", "Bash(curl *)"}  # held
    lo = told.last()
    assert lo is not None and lo.file == ".gate/rules.yaml" and lo.layer == "project"
    [change] = lo.changes
    assert (change.rule, change.where, change.becomes) == (
        "Read(./a)",
        ".gate/rules.yaml:2",
        "removed",
    )
    assert store.loosenings() == [lo]
    assert store.confirm(lo, approve=True)
    policy = store.policy_for(str(root))
    assert _texts(store, root) == {"Read(./b)", "Bash(curl *)"}
    assert not policy.warnings and store.loosenings() == []
    assert not store.confirm(lo, approve=True)  # answered: nothing is held any more


def test_declining_keeps_the_rules_and_the_same_edit_is_not_asked_again(
    gate_dirs: dict[str, Path], team: Path
) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(team, "deny:\n  - Read(./b)\nask:\n  - Bash(curl *)\n", 2)
    store.policy_for(str(root))
    lo = told.last()
    assert lo is not None and store.confirm(lo, approve=False)
    assert "Read(./a)" in _texts(store, root)
    _write(team, "deny:\n  - Read(./b)\nask:\n  - Bash(curl *)\n", 3)  # saved again, unchanged
    assert "Read(./a)" in _texts(store, root)
    assert told.last() is None  # declined: nothing to ask about that edit
    _write(team, "ask:\n  - Bash(curl *)\n", 4)  # a new change: asked about, both rules
    assert _texts(store, root) == {"Read(./a)", "Read(./b)", "Bash(curl *)"}
    again = told.last()
    assert again is not None and {c.rule for c in again.changes} == {"Read(./a)", "Read(./b)"}


def test_the_same_edit_saved_again_is_the_same_question(
    gate_dirs: dict[str, Path], team: Path
) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    for stamp in (2, 3, 4):
        _write(team, "deny:\n  - Read(./b)\nask:\n  - Bash(curl *)\n", stamp)
        store.policy_for(str(root))
    assert len(told.news) == 3 and len({lo for _, lo in told.news}) == 1
    lo = told.last()
    assert lo is not None and store.confirm(lo, approve=True)  # the last save applies
    assert _texts(store, root) == {"Read(./b)", "Bash(curl *)"}


def test_a_further_edit_replaces_the_question_and_an_old_answer_does_nothing(
    gate_dirs: dict[str, Path], team: Path
) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(team, "deny:\n  - Read(./b)\nask:\n  - Bash(curl *)\n", 2)
    store.policy_for(str(root))
    first = told.last()
    # The agent edits again before anyone answers: the curl ask rule becomes an allow.
    _write(team, "deny:\n  - Read(./b)\nallow:\n  - Bash(curl *)\n", 3)
    store.policy_for(str(root))
    second = told.last()
    assert first is not None and second is not None and first != second
    assert {(c.rule, c.becomes) for c in second.changes} == {
        ("Read(./a)", "removed"),
        ("Bash(curl *)", "allow"),
    }
    assert not store.confirm(first, approve=True)  # about an edit that is gone
    assert _texts(store, root) == {"Read(./a)", "Read(./b)", "Bash(curl *)"}
    assert store.confirm(second, approve=True)
    policy = store.policy_for(str(root))
    assert {(r.effect.value, r.text) for r in policy.rules if r.layer == "project"} == {
        ("deny", "Read(./b)"),
        ("allow", "Bash(curl *)"),
    }


def test_an_edit_undone_withdraws_the_question(gate_dirs: dict[str, Path], team: Path) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(team, "deny:\n  - Read(./b)\nask:\n  - Bash(curl *)\n", 2)
    store.policy_for(str(root))
    assert told.last() is not None
    _write(team, RULES, 3)
    store.policy_for(str(root))
    assert told.last() is None and store.loosenings() == []
    assert not store.policy_for(str(root)).warnings


@pytest.mark.parametrize(
    ("after", "becomes"),
    [
        ("allow:\n  - Read(./a)\n", "allow"),
        ("ask:\n  - Read(./a)\n", "ask"),
        ("deny:\n  - rule: Read(./a)\n    unless: ['./a']\n", "exception"),
        ("deny:\n  - Read(./z)\n", "removed"),
    ],
)
def test_each_change_says_what_the_edit_makes_of_the_rule(
    gate_dirs: dict[str, Path], after: str, becomes: str
) -> None:
    root = gate_dirs["project"]
    team = root / ".gate" / "rules.yaml"
    _write(team, "deny:\n  - Read(./a)\n", 1)
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(team, after, 2)
    store.policy_for(str(root))
    lo = told.last()
    assert lo is not None
    [change] = lo.changes
    assert (change.rule, change.effect, change.becomes) == ("Read(./a)", "deny", becomes)
    assert (change.now_where is None) is (becomes == "removed")


def test_tightening_asks_nothing(gate_dirs: dict[str, Path], team: Path) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(team, RULES + "  - Bash(scp *)\n", 2)
    assert "Bash(scp *)" in _texts(store, root)  # at once
    assert told.news and all(lo is None for _, lo in told.news)


def test_a_file_broken_after_an_approval_keeps_the_approved_rules(
    gate_dirs: dict[str, Path], team: Path, log_lines: list[str]
) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(team, "deny:\n  - Read(./b)\n", 2)
    store.policy_for(str(root))
    lo = told.last()
    assert lo is not None and store.confirm(lo, approve=True)
    _write(team, "deny:\n  - Read(./b\n", 3)  # broken: the last good rules are the approved
    policy = store.policy_for(str(root))
    assert _texts(store, root) == {"Read(./b)"}
    [warning] = policy.warnings
    assert warning.startswith(".gate/rules.yaml:2:") and "previous rules" in warning
    assert any("gate keeps this file's previous rules" in line for line in log_lines)


def test_a_file_broken_while_a_change_is_held_keeps_holding(
    gate_dirs: dict[str, Path], team: Path
) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(team, "deny:\n  - Read(./b)\n", 2)
    store.policy_for(str(root))
    lo = told.last()
    _write(team, "deny: [\n", 3)
    assert _texts(store, root) == {"Read(./a)", "Read(./b)", "Bash(curl *)"}
    warnings = store.policy_for(str(root)).warnings
    assert any("previous rules" in w for w in warnings)
    assert any("until a person confirms the change" in w for w in warnings)
    assert store.loosenings() == [lo]  # the question about the good edit stays open


def test_a_loosened_secrets_policy_waits_for_the_answer(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    user = gate_dirs["config"] / "rules.yaml"
    _write(user, "secrets:\n  high: block\n", 1)
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(user, "secrets:\n  high: allow\n", 2)
    policy = store.policy_for(str(root))
    assert policy.secret_action("github-token", "github.token", "high") == "block"
    lo = told.last()
    assert lo is not None and lo.file.endswith("rules.yaml") and lo.layer == "user"
    assert lo.changes == () and lo.secrets_before == ((("high", "block"),),)
    assert lo.secrets_now == (("high", "allow"),)
    _write(user, "secrets:\n  high: allow\n", 3)  # saved again: the same question
    store.policy_for(str(root))
    assert told.last() == lo
    assert store.confirm(lo, approve=True)
    policy = store.policy_for(str(root))
    assert policy.secret_action("github-token", "github.token", "high") == "allow"


def test_claude_settings_loosened_are_asked_about(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    settings = root / ".claude" / "settings.json"
    _write(settings, '{"permissions": {"deny": ["Read(./x)", "Bash(curl *)"]}}', 1)
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(settings, '{"permissions": {"deny": [42, "Bash(curl *)"]}}', 2)
    assert "Read(./x)" in _texts(store, root)
    lo = told.last()
    assert lo is not None and lo.layer == "claude-project"
    assert [c.rule for c in lo.changes] == ["Read(./x)"]
    assert store.confirm(lo, approve=True)
    assert "Read(./x)" not in _texts(store, root)


def test_an_exception_taken_away_is_a_tightening(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    team = root / ".gate" / "rules.yaml"
    _write(team, "deny:\n  - rule: Read(./a/**)\n    unless: ['./a/ok', './a/fine']\n", 1)
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    _write(team, "deny:\n  - rule: Read(./a/**)\n    unless: ['./a/ok']\n", 2)
    policy = store.policy_for(str(root))
    assert told.last() is None and not policy.warnings
    assert [r.unless for r in policy.rules if r.layer == "project"] == [("./a/ok",)]


@pytest.mark.parametrize("remove", ["file", "dir"])
def test_a_removed_rule_file_is_held_like_an_emptied_one(
    gate_dirs: dict[str, Path], team: Path, remove: str
) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    team.unlink()
    if remove == "dir":
        team.parent.rmdir()
    assert _texts(store, root) == {"Read(./a)", "Read(./b)", "Bash(curl *)"}
    lo = told.last()
    assert lo is not None and lo.file == ".gate/rules.yaml"
    assert {(c.rule, c.becomes) for c in lo.changes} == {
        ("Read(./a)", "removed"),
        ("Read(./b)", "removed"),
        ("Bash(curl *)", "removed"),
    }
    for _ in range(3):  # asked once, and held on every later reload
        (root / "README").write_text("x")  # another file changes: a reload
        assert _texts(store, root) == {"Read(./a)", "Read(./b)", "Bash(curl *)"}
    assert [lo for _, lo in told.news if lo is not None] == [lo]
    assert store.confirm(lo, approve=True)
    assert _texts(store, root) == set()


def test_a_removed_file_put_back_withdraws_the_question(
    gate_dirs: dict[str, Path], team: Path
) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    team.unlink()
    store.policy_for(str(root))
    assert told.last() is not None
    _write(team, RULES, 5)
    assert _texts(store, root) == {"Read(./a)", "Read(./b)", "Bash(curl *)"}
    assert told.last() is None and store.loosenings() == []


def test_confirming_one_file_keeps_another_removed_files_rules_held(
    gate_dirs: dict[str, Path], team: Path
) -> None:
    root = gate_dirs["project"]
    local = root / ".gate" / "rules.local.yaml"
    _write(local, "deny:\n  - Read(./mine)\n", 1)
    store = PolicyStore()
    told = Told(store)
    store.policy_for(str(root))
    local.unlink()
    store.policy_for(str(root))
    _write(team, "deny:\n  - Read(./b)\n", 2)
    store.policy_for(str(root))
    [edited] = [lo for lo in store.loosenings() if lo.file == ".gate/rules.yaml"]
    assert store.confirm(edited, approve=True)
    assert _texts(store, root) == {"Read(./b)", "Read(./mine)"}
    assert [lo.file for lo in store.loosenings()] == [".gate/rules.local.yaml"]
    assert told.news


def test_a_removed_user_file_is_held_for_a_project_first_seen_since(
    gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    user = gate_dirs["config"] / "rules.yaml"
    _write(user, "deny:\n  - Read(~/notes/**)\n", 1)
    other = tmp_path / "other"
    (other / ".git").mkdir(parents=True)
    store = PolicyStore()
    told = Told(store)
    assert "Read(~/notes/**)" in _texts(store, gate_dirs["project"])
    user.unlink()
    assert "Read(~/notes/**)" in _texts(store, gate_dirs["project"])
    assert "Read(~/notes/**)" in _texts(store, other)  # never loaded before: held too
    [lo] = [lo for _, lo in told.news if lo is not None]
    assert lo.layer == "user"
    assert store.confirm(lo, approve=True)
    assert "Read(~/notes/**)" not in _texts(store, other)
    assert "Read(~/notes/**)" not in _texts(store, gate_dirs["project"])
