"""A policy is re-checked with a few stats per request: every change to where rules come
from is still seen on the very next request, with no time bound (a store without a recheck
window, the default; the serving gate's window is tested in test_recheck.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from gate.rules import probe
from gate.rules.layers import PolicyStore


def _texts(store: PolicyStore, root: Path) -> list[str]:
    return sorted(r.text for r in store.policy_for(str(root)).rules if r.layer != "pack")


def _settings(path: Path, *deny: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"permissions": {"deny": list(deny)}}))


@pytest.fixture
def repo(gate_dirs: dict[str, Path]) -> Path:
    """A repository whose agent works in a subdirectory (layers are looked for upwards)."""
    (gate_dirs["project"] / ".git").mkdir()
    sub = gate_dirs["project"] / "pkg" / "sub"
    sub.mkdir(parents=True)
    return sub


def test_a_rule_file_created_is_seen_at_once(repo: Path, gate_dirs: dict[str, Path]) -> None:
    store = PolicyStore()
    assert _texts(store, repo) == []
    team = gate_dirs["project"] / ".gate" / "rules.yaml"
    team.parent.mkdir()
    team.write_text("deny:\n  - Read(./a)\n")
    assert _texts(store, repo) == ["Read(./a)"]
    team.unlink()
    assert _texts(store, repo) == ["Read(./a)"]  # seen removed, and held (test_confirm.py)
    [removed] = store.loosenings()
    assert [c.becomes for c in removed.changes] == ["removed"]


def test_a_rewrite_within_the_same_mtime_is_seen(gate_dirs: dict[str, Path]) -> None:
    """Coarse clocks: the same mtime, another size (or inode) is another version."""
    root = gate_dirs["project"]
    team = root / ".gate" / "rules.yaml"
    team.parent.mkdir()
    team.write_text("deny:\n  - Read(./a)\n")
    os.utime(team, (1, 1))
    store = PolicyStore()
    assert _texts(store, root) == ["Read(./a)"]
    team.write_text("deny:\n  - Read(./a)\n  - Read(./long-name)\n")
    os.utime(team, (1, 1))
    assert _texts(store, root) == ["Read(./a)", "Read(./long-name)"]


def test_claude_settings_appearing_in_a_parent_are_seen(
    repo: Path, gate_dirs: dict[str, Path]
) -> None:
    store = PolicyStore()
    assert _texts(store, repo) == []
    _settings(repo.parent / ".claude" / "settings.json", "Read(./x)")
    assert _texts(store, repo) == ["Read(./x)"]
    _settings(gate_dirs["home"] / ".claude" / "settings.json", "Read(./y)")
    assert _texts(store, repo) == ["Read(./x)", "Read(./y)"]


def test_a_managed_drop_in_added_is_seen(gate_dirs: dict[str, Path], tmp_path: Path) -> None:
    root = gate_dirs["project"]
    drop_in = tmp_path / "claude-managed" / "managed-settings.d"
    _settings(drop_in / "10-a.json", "Read(./a)")
    store = PolicyStore()
    assert _texts(store, root) == ["Read(./a)"]
    _settings(drop_in / "20-b.json", "Read(./b)")
    assert _texts(store, root) == ["Read(./a)", "Read(./b)"]


def test_the_environment_moving_a_layer_is_seen(
    gate_dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = gate_dirs["project"]
    other = tmp_path / "other-managed.yaml"
    other.write_text("deny:\n  - Read(./m)\n")
    store = PolicyStore()
    assert _texts(store, root) == []
    monkeypatch.setenv("GATE_MANAGED_RULES", str(other))
    assert _texts(store, root) == ["Read(./m)"]


def test_a_git_boundary_created_never_hides_the_parent_rules(
    repo: Path, gate_dirs: dict[str, Path]
) -> None:
    team = gate_dirs["project"] / ".gate" / "rules.yaml"
    team.parent.mkdir()
    team.write_text("deny:\n  - Read(./a)\n")
    store = PolicyStore()
    assert _texts(store, repo) == ["Read(./a)"]
    # Anyone (the agent) can make a `.git`: the outer rules still hold, and a `.gate/`
    # made inside adds its own, seen at once.
    (repo / ".git").mkdir()
    assert _texts(store, repo) == ["Read(./a)"]
    assert store.loosenings() == []  # nothing was loosened, so nobody is asked
    (repo / ".gate").mkdir()
    (repo / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./b)\n")
    assert sorted(_texts(store, repo)) == ["Read(./a)", "Read(./b)"]


def test_unchanged_answers_are_a_cache_hit(gate_dirs: dict[str, Path]) -> None:
    store = PolicyStore()
    first = store.policy_for(str(gate_dirs["project"]))
    assert store.policy_for(str(gate_dirs["project"])) is first


def test_facts_name_type_and_version(tmp_path: Path) -> None:
    f = tmp_path / "a.yaml"
    with probe.recording() as facts:
        assert not probe.exists(f)
        assert probe.is_dir(tmp_path)
        assert probe.listing(tmp_path / "missing", "*.json") == []
    assert probe.unchanged(facts)
    f.write_text("x")
    assert not probe.unchanged(facts)
    assert probe.version(f) is not None and probe.version(tmp_path / "nope") is None


def _gate_rules(path: Path, rule: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"deny:\n  - {rule}\n")


# Every place a layer can come from, created after the first request was screened.
_PLACES = {
    "managed": lambda d: _gate_rules(d["tmp"] / "managed-rules.yaml", "Read(./m)"),
    "user": lambda d: _gate_rules(d["config"] / "rules.yaml", "Read(./m)"),
    "project": lambda d: _gate_rules(d["project"] / ".gate" / "rules.yaml", "Read(./m)"),
    "project-local": lambda d: _gate_rules(
        d["project"] / ".gate" / "rules.local.yaml", "Read(./m)"
    ),
    "claude-managed": lambda d: _settings(
        d["tmp"] / "claude-managed" / "managed-settings.json", "Read(./m)"
    ),
    "claude-project": lambda d: _settings(d["project"] / ".claude" / "settings.json", "Read(./m)"),
    "claude-local": lambda d: _settings(
        d["project"] / ".claude" / "settings.local.json", "Read(./m)"
    ),
    "claude-user": lambda d: _settings(d["home"] / ".claude" / "settings.json", "Read(./m)"),
}


@pytest.mark.parametrize("place", sorted(_PLACES))
def test_a_layer_created_anywhere_applies_to_the_next_request(
    place: str, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    store = PolicyStore()
    root = gate_dirs["project"]
    assert "Read(./m)" not in _texts(store, root)
    assert "Read(./m)" not in _texts(store, root)  # the cached answer, checked by stats
    _PLACES[place]({**gate_dirs, "tmp": tmp_path})
    assert "Read(./m)" in _texts(store, root)
