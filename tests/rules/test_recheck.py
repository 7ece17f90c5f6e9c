"""The serving gate trusts its last look at the rule files for RECHECK_AFTER seconds: no
stat within it, and an edited, created or removed rule file in force on the first request
after it (the clock is the store's, passed in)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.rules.layers import RECHECK_AFTER, PolicyStore


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _texts(store: PolicyStore, root: Path) -> list[str]:
    return sorted(r.text for r in store.policy_for(str(root)).rules if r.layer != "pack")


@pytest.fixture
def team(gate_dirs: dict[str, Path]) -> Path:
    path = gate_dirs["project"] / ".gate" / "rules.yaml"
    path.parent.mkdir()
    path.write_text("deny:\n  - Read(./a)\n")
    return path


def test_the_window_is_short() -> None:
    assert 0 < RECHECK_AFTER <= 0.25  # what docs/rules.md promises


@pytest.mark.parametrize("after", [RECHECK_AFTER + 0.001, 1.0, 60.0])
def test_an_edit_is_in_force_once_the_window_has_passed(
    team: Path, gate_dirs: dict[str, Path], after: float
) -> None:
    root, clock = gate_dirs["project"], _Clock()
    store = PolicyStore(recheck_after=RECHECK_AFTER, clock=clock)
    assert _texts(store, root) == ["Read(./a)"]
    team.write_text("deny:\n  - Read(./a)\n  - Read(./b)\n")
    clock.now += after
    assert _texts(store, root) == ["Read(./a)", "Read(./b)"]


def test_a_rule_file_created_is_in_force_after_the_window(gate_dirs: dict[str, Path]) -> None:
    root, clock = gate_dirs["project"], _Clock()
    store = PolicyStore(recheck_after=RECHECK_AFTER, clock=clock)
    assert _texts(store, root) == []
    (root / ".gate").mkdir()
    (root / ".gate" / "rules.local.yaml").write_text("deny:\n  - Read(./c)\n")
    clock.now += RECHECK_AFTER + 0.001
    assert _texts(store, root) == ["Read(./c)"]


def test_within_the_window_the_last_look_stands(team: Path, gate_dirs: dict[str, Path]) -> None:
    """Nothing is looked at within the window: an edit then is not seen yet. The window is
    counted from the last look, which a call after the window makes again."""
    root, clock = gate_dirs["project"], _Clock()
    store = PolicyStore(recheck_after=RECHECK_AFTER, clock=clock)
    first = store.policy_for(str(root))
    start = clock.now
    clock.now = start + RECHECK_AFTER * 1.5
    assert store.policy_for(str(root)) is first  # looked again at now: unchanged
    team.write_text("deny:\n  - Read(./a)\n  - Read(./e)\n")
    clock.now = start + RECHECK_AFTER * 2
    assert store.policy_for(str(root)) is first
    clock.now = start + RECHECK_AFTER * 2.6
    assert _texts(store, root) == ["Read(./a)", "Read(./e)"]


def test_without_a_window_every_call_looks(team: Path, gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    clock = _Clock()
    store = PolicyStore(clock=clock)  # the default: tools and tests see an edit at once
    assert _texts(store, root) == ["Read(./a)"]
    team.write_text("deny:\n  - Read(./a)\n  - Read(./d)\n")
    assert _texts(store, root) == ["Read(./a)", "Read(./d)"]
