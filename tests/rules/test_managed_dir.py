"""The managed layer from a directory a deployment mounts: every `*.yaml` in name order,
errors naming their file:line, and no project rule loosening it."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gate.errors import RuleError
from gate.lock.scope import plan_for
from gate.rules.layers import PolicyStore
from gate.rules.model import Effect
from rule_kit import call


@pytest.fixture
def rules_d(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "rules.d"
    d.mkdir()
    monkeypatch.setenv("GATE_MANAGED_RULES", str(d))
    return d


def _project(root: Path, text: str) -> None:
    (root / ".gate").mkdir(exist_ok=True)
    (root / ".gate" / "rules.yaml").write_text(text)


def _effect(policy: object, root: Path, tool: str, **args: str) -> Effect | None:
    return policy.decide(call(tool, str(root), **args), str(root)).effect  # type: ignore[attr-defined]


def test_every_yaml_file_in_the_directory_is_one_managed_layer_in_name_order(
    rules_d: Path, gate_dirs: dict[str, Path]
) -> None:
    (rules_d / "20-network.yaml").write_text("deny:\n  - Bash(curl *)\n")
    (rules_d / "10-secrets.yaml").write_text("deny:\n  - Read(./.env)\n")
    (rules_d / "README.md").write_text("not rules: only *.yaml is read\n")
    (rules_d / ".30-draft.yaml").write_text("deny: [\n")  # an editor's temporary file
    root = gate_dirs["project"]
    policy = PolicyStore().policy_for(str(root))
    managed = [(r.text, r.where, r.layer) for r in policy.rules if r.layer == "managed"]
    assert managed == [
        ("Read(./.env)", f"{rules_d / '10-secrets.yaml'}:2", "managed"),
        ("Bash(curl *)", f"{rules_d / '20-network.yaml'}:2", "managed"),
    ]
    assert _effect(policy, root, "Bash", command="curl x") is Effect.DENY
    assert _effect(policy, root, "Read", file_path=str(root / ".env")) is Effect.DENY


def test_a_bad_file_in_the_directory_names_itself_and_stops_gate(rules_d: Path) -> None:
    (rules_d / "10-good.yaml").write_text("deny:\n  - Bash(curl *)\n")
    (rules_d / "20-bad.yaml").write_text("deny:\n  - Bash(curl *)\n  - 'Read('\n")
    with pytest.raises(RuleError) as err:
        PolicyStore()
    assert err.value.where == f"{rules_d / '20-bad.yaml'}:3"


def test_a_file_added_to_the_directory_applies_at_once(
    rules_d: Path, gate_dirs: dict[str, Path]
) -> None:
    root = gate_dirs["project"]
    store = PolicyStore()
    assert _effect(store.policy_for(str(root)), root, "Bash", command="scp a b:") is None
    (rules_d / "30-scp.yaml").write_text("deny:\n  - Bash(scp *)\n")
    assert _effect(store.policy_for(str(root)), root, "Bash", command="scp a b:") is Effect.DENY


def test_a_project_cannot_loosen_a_managed_deny_or_lockdown(
    rules_d: Path, gate_dirs: dict[str, Path]
) -> None:
    root = gate_dirs["project"]
    (rules_d / "10-deny.yaml").write_text("deny:\n  - Read(./.env)\n  - Bash(curl *)\n")
    (rules_d / "20-lockdown.yaml").write_text("lockdown: true\nallow:\n  - Bash(git status)\n")
    _project(root, "allow:\n  - Read(./.env)\n  - Bash(curl *)\n  - Bash(ls *)\n")
    (root / ".gate" / "rules.local.yaml").write_text("allow:\n  - Bash(curl *)\n")
    policy = PolicyStore().policy_for(str(root))
    assert policy.lockdown
    assert _effect(policy, root, "Read", file_path=str(root / ".env")) is Effect.DENY
    assert _effect(policy, root, "Bash", command="curl https://x") is Effect.DENY
    assert _effect(policy, root, "Bash", command="ls") is None  # the project's allow is set aside
    assert _effect(policy, root, "Bash", command="git status") is Effect.ALLOW
    # lockdown: in a project file is refused, naming it.
    _project(root, "lockdown: true\ndeny:\n  - Bash(scp *)\n")
    with pytest.raises(RuleError, match="managed rule file only"):
        PolicyStore().policy_for(str(root))


def test_a_read_only_directory_is_read_and_a_lock_keeps_it_read_only(
    rules_d: Path, gate_dirs: dict[str, Path]
) -> None:
    f = rules_d / "10-deny.yaml"
    f.write_text("deny:\n  - Bash(curl *)\n")
    f.chmod(0o444)
    rules_d.chmod(0o555)  # as mounted `:ro`: gate only reads it
    try:
        root = gate_dirs["project"]
        assert _effect(PolicyStore().policy_for(str(root)), root, "Bash", command="curl x") is (
            Effect.DENY
        )
        plan = plan_for(["claude"], 8787, str(root), {})
        assert str(rules_d) in plan.readonly  # an agent inside a lock cannot add a file
    finally:
        rules_d.chmod(0o755)
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o444
