"""Claude Code's own permission rules as a layer: managed, project, local and user settings."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

from gate.agents.actions import Action, Verb
from gate.rules.layers import PolicyStore
from gate.rules.model import Effect
from rule_kit import call


def _settings(
    path: Path, deny: Sequence[str] = (), ask: Sequence[str] = (), allow: Sequence[str] = ()
) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    perms = {"allow": list(allow), "deny": list(deny), "ask": list(ask)}
    path.write_text(json.dumps({"model": "x", "permissions": perms}, indent=2) + "\n")
    return path


@pytest.fixture
def managed() -> Path:
    return Path(os.environ["GATE_CLAUDE_MANAGED_DIR"])


def _ours(store: PolicyStore, root: str) -> list[tuple[str, str, str, str]]:
    return [
        (r.effect.value, r.text, r.where, r.layer)
        for r in store.policy_for(root).rules
        if r.layer.startswith("claude")
    ]


def test_every_settings_file_is_read_with_its_line(
    gate_dirs: dict[str, Path], managed: Path
) -> None:
    home, project = gate_dirs["home"], gate_dirs["project"]
    _settings(managed / "managed-settings.json", deny=["Read(//etc/corp/**)"])
    _settings(managed / "managed-settings.d" / "20-b.json", deny=["Bash(scp *)"])
    _settings(managed / "managed-settings.d" / "10-a.json", ask=["Bash(ssh *)"])
    _settings(
        project / ".claude" / "settings.json", deny=["Read(./secrets/**)"], ask=["Bash(git push:*)"]
    )
    _settings(project / ".claude" / "settings.local.json", deny=["WebFetch(domain:evil.test)"])
    _settings(home / ".claude" / "settings.json", deny=["mcp__prod_db"], allow=["Bash(*)"])
    assert _ours(PolicyStore(), str(project)) == [
        ("deny", "Read(//etc/corp/**)", f"{managed}/managed-settings.json:6", "claude-managed"),
        ("ask", "Bash(ssh *)", f"{managed}/managed-settings.d/10-a.json:7", "claude-managed"),
        ("deny", "Bash(scp *)", f"{managed}/managed-settings.d/20-b.json:6", "claude-managed"),
        ("deny", "WebFetch(domain:evil.test)", ".claude/settings.local.json:6", "claude-local"),
        ("deny", "Read(./secrets/**)", ".claude/settings.json:6", "claude-project"),
        ("ask", "Bash(git push:*)", ".claude/settings.json:9", "claude-project"),
        ("deny", "mcp__prod_db", "~/.claude/settings.json:8", "claude-user"),
    ]


def test_their_rules_are_enforced_and_allow_is_not_read(gate_dirs: dict[str, Path]) -> None:
    project = gate_dirs["project"]
    _settings(
        project / ".claude" / "settings.json", deny=["Read(./secrets/**)"], allow=["Read(./.env)"]
    )
    policy = PolicyStore().policy_for(str(project))
    assert not [r for r in policy.rules if r.effect is Effect.ALLOW]
    decision = policy.decide(call("Bash", str(project), command="cat secrets/db.txt"), str(project))
    assert decision.effect is Effect.DENY and decision.rule is not None
    assert decision.rule.where == ".claude/settings.json:8"
    env = Action(verb=Verb.READ, tool="Read", target=str(project / ".env"))
    assert policy.decide(env, str(project)).effect is Effect.DENY  # the pack still denies


def test_slash_paths_are_relative_to_each_settings_source(gate_dirs: dict[str, Path]) -> None:
    home, project = gate_dirs["home"], gate_dirs["project"]
    _settings(project / ".claude" / "settings.json", deny=["Read(/build/**)"])
    _settings(home / ".claude" / "settings.json", deny=["Read(/notes/**)"])
    policy = PolicyStore().policy_for(str(project))

    def denied(path: Path) -> bool:
        return (
            policy.decide(
                Action(verb=Verb.READ, tool="Read", target=str(path)), str(project)
            ).effect
            is Effect.DENY
        )

    assert denied(project / "build" / "a.txt")
    assert denied(home / ".claude" / "notes" / "n.md")
    assert not denied(project / "notes" / "n.md")


def test_project_settings_are_found_from_a_subdirectory_but_not_in_home(
    gate_dirs: dict[str, Path],
) -> None:
    home, repo = gate_dirs["home"], gate_dirs["project"]
    (repo / ".git").mkdir()
    _settings(repo / ".claude" / "settings.json", deny=["Bash(make deploy)"])
    sub = repo / "pkg"
    sub.mkdir()
    rules = [r for r in PolicyStore().policy_for(str(sub)).rules if r.layer == "claude-project"]
    assert [r.where for r in rules] == [f"{repo}/.claude/settings.json:6"]
    # ~/.claude/settings.json is the user's file, never a project's.
    _settings(home / ".claude" / "settings.json", deny=["Bash(rm *)"])
    plain = home / "scratch"
    plain.mkdir()
    layers = {r.layer for r in PolicyStore().policy_for(str(plain)).rules}
    assert "claude-user" in layers and "claude-project" not in layers


def test_settings_an_agent_made_below_the_repository_add_rules_never_hide_them(
    gate_dirs: dict[str, Path],
) -> None:
    repo = gate_dirs["project"]
    (repo / ".git").mkdir()
    _settings(repo / ".claude" / "settings.json", deny=["Read(/vault/**)"])
    sub = repo / "pkg"
    (sub / ".git").mkdir(parents=True)  # a boundary anyone can make
    _settings(sub / ".claude" / "settings.json", allow=["Read"], deny=["Bash(make x)"])
    policy = PolicyStore().policy_for(str(sub))
    decision = policy.decide(
        Action(verb=Verb.READ, tool="Read", target=f"{repo}/vault/k"), str(sub)
    )
    assert decision.effect is Effect.DENY
    assert decision.rule is not None and decision.rule.where == f"{repo}/.claude/settings.json:6"
    assert any(r.text == "Bash(make x)" for r in policy.rules)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('{\n  "permissions": {\n    "deny": ["Read(x)",]\n  }\n}\n', 3, "not valid JSON"),
        ("", 1, "not valid JSON"),
        ('[\n  "Read(x)"\n]\n', 1, "expected a JSON object"),
        ('{\n  "permissions": ["Read(x)"]\n}\n', 2, "permissions must be an object"),
        ('{\n  "permissions": {\n    "deny": "Read(x)"\n  }\n}\n', 3, "must be a list"),
    ],
)
def test_a_malformed_settings_file_is_a_warning_not_a_stop(
    gate_dirs: dict[str, Path], text: str, line: int, words: str
) -> None:
    project = gate_dirs["project"]
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.json").write_text(text)
    policy = PolicyStore().policy_for(str(project))  # no RuleError
    (warning,) = policy.warnings
    assert warning.startswith(f".claude/settings.json:{line}: ")
    assert words in warning
    assert "gate enforces none of this Claude Code settings file's rules" in warning


def test_a_bad_rule_string_is_skipped_with_its_line(
    gate_dirs: dict[str, Path], log_lines: list[str]
) -> None:
    project = gate_dirs["project"]
    _settings(
        project / ".claude" / "settings.json",
        deny=["Read(./a)", "Bash(curl", "read(./b)", "Read(./c)"],
    )
    policy = PolicyStore().policy_for(str(project))
    texts = [r.text for r in policy.rules if r.layer == "claude-project"]
    assert texts == ["Read(./a)", "Read(./c)"]
    assert [w.split(": ", 1)[0] for w in policy.warnings] == [
        ".claude/settings.json:7",
        ".claude/settings.json:8",
    ]
    assert all("gate skips this Claude Code rule" in w for w in policy.warnings)
    assert sum("gate skips this Claude Code rule" in line for line in log_lines) == 2


def test_a_deny_in_claude_settings_beats_an_allow_in_gate_rules(gate_dirs: dict[str, Path]) -> None:
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("allow:\n  - Bash(curl *)\n")
    _settings(project / ".claude" / "settings.json", deny=["Bash(curl *)"])
    decision = (
        PolicyStore()
        .policy_for(str(project))
        .decide(call("Bash", str(project), command="curl http://x"), str(project))
    )
    assert decision.effect is Effect.DENY and decision.rule is not None
    assert decision.rule.layer == "claude-project"
