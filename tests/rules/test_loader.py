"""Rule files: bad input names file:line and what to write instead."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.agents.actions import Action, Verb
from gate.errors import RuleError
from gate.rules.layers import PolicyStore, Roots, find_root
from gate.rules.loader import load_file, load_text
from gate.rules.model import Effect


def test_rules_carry_file_and_line() -> None:
    rules = load_text(
        "# team rules\ndeny:\n  - Read(./.env)\n  - rule: Read(.env.*)\n"
        "    unless: [.env.example]\nask:\n  - Bash(curl *)\n",
        "team.yaml",
    )
    assert [(r.effect, r.text, r.where) for r in rules] == [
        (Effect.DENY, "Read(./.env)", "team.yaml:3"),
        (Effect.DENY, "Read(.env.*)", "team.yaml:4"),
        (Effect.ASK, "Bash(curl *)", "team.yaml:7"),
    ]
    assert rules[1].unless == (".env.example",)


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("deny:\n  - Read(./.env\n", "t.yaml:2", "not a rule"),
        ("deny:\n  - Read()\n", "t.yaml:2", "empty specifier"),
        ("deny: Read(./.env)\n", "t.yaml:1", "must be a list"),
        ("denny:\n  - Read(./.env)\n", "t.yaml:1", "unknown key 'denny'"),
        ("deny:\n  - rule: Read(x)\n    unles: [y]\n", "t.yaml:2", "unknown key 'unles'"),
        ("deny:\n  - unless: [y]\n", "t.yaml:2", "no rule"),
        ("deny:\n  - [Read(x)\n", "t.yaml:3", "not valid YAML"),
        ("schemaVersion: 9\ndeny:\n  - Read(x)\n", "t.yaml:1", "schemaVersion 9"),
        ("deny:\n  - rule: Bash(ls)\n    unless: [x]\n", "t.yaml:2", "unless: applies"),
        ("deny:\n  - read(./.env)\n", "t.yaml:2", "write Read(...)"),
    ],
)
def test_bad_rule_files_name_the_line(text: str, where: str, words: str) -> None:
    with pytest.raises(RuleError) as info:
        load_text(text, "t.yaml")
    assert info.value.where == where
    assert words in info.value.message


def test_an_empty_rule_file_is_an_error_not_allow(tmp_path: Path) -> None:
    path = tmp_path / "rules.yaml"
    path.write_text("# nothing yet\n")
    with pytest.raises(RuleError, match="no rules"):
        load_file(path)


def test_a_malformed_user_rule_file_stops_gate(gate_dirs: dict[str, Path]) -> None:
    gate_dirs["config"].mkdir()
    (gate_dirs["config"] / "rules.yaml").write_text("deny:\n  - Read(./.env\n")
    with pytest.raises(RuleError) as info:
        PolicyStore()
    assert info.value.where is not None and info.value.where.endswith("rules.yaml:2")


def test_project_rules_apply_and_reload_when_changed(gate_dirs: dict[str, Path]) -> None:
    root = gate_dirs["project"]
    (root / ".gate").mkdir()
    team = root / ".gate" / "rules.yaml"
    team.write_text("deny:\n  - Read(./config/prod.json)\n")
    store = PolicyStore()
    texts = [r.text for r in store.policy_for(str(root)).rules]
    assert "Read(./config/prod.json)" in texts
    team.write_text("deny:\n  - Read(./config/staging.json)\n")
    import os

    os.utime(team, (1, 1))  # a different mtime, whatever the clock's resolution
    policy = store.policy_for(str(root))
    texts = [r.text for r in policy.rules]
    # Tightening at once; the rule removed stays until a person confirms it (or restarts gate).
    assert "Read(./config/staging.json)" in texts and "Read(./config/prod.json)" in texts
    assert any("Read(./config/prod.json) was removed" in w for w in policy.warnings)
    texts = [r.text for r in PolicyStore().policy_for(str(root)).rules]
    assert "Read(./config/staging.json)" in texts and "Read(./config/prod.json)" not in texts


def test_project_rules_are_found_from_a_subdirectory(gate_dirs: dict[str, Path]) -> None:
    repo = gate_dirs["project"]
    (repo / ".git").mkdir()
    (repo / ".gate").mkdir()
    (repo / ".gate" / "rules.yaml").write_text("deny:\n  - Read(/secrets/**)\n")
    sub = repo / "services" / "api"
    sub.mkdir(parents=True)
    rules = [
        r
        for r in PolicyStore().policy_for(str(sub)).rules
        if r.tool == "Read" and r.specifier == "/secrets/**"
    ]
    assert rules and rules[0].root == str(repo)  # `/` patterns anchor at the repository
    assert rules[0].where == f"{repo}/.gate/rules.yaml:2"
    # Above the repository's top too (a `.git` is no wall: anyone can make one), each
    # anchored at its own directory, so it only adds rules about its own tree.
    outer = gate_dirs["home"] / "elsewhere"
    (outer / ".gate").mkdir(parents=True)
    (outer / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./x)\n")
    (outer / "repo" / ".git").mkdir(parents=True)
    policy = PolicyStore().policy_for(str(outer / "repo"))
    assert [r.where for r in policy.rules if r.text == "Read(./x)"] == [
        "~/elsewhere/.gate/rules.yaml:2"
    ]
    root = str(outer / "repo")
    assert (
        policy.decide(Action(verb=Verb.READ, tool="Read", target=f"{outer}/x"), root).effect
        is Effect.DENY
    )
    assert policy.decide(Action(verb=Verb.READ, tool="Read", target=f"{root}/x"), root).rule is None


@pytest.mark.parametrize("forged", [".gate", ".git"])
def test_a_dir_an_agent_made_below_the_repository_adds_rules_never_replaces_them(
    gate_dirs: dict[str, Path], forged: str
) -> None:
    # An agent (locked or not) leaves `sub/.gate/` (allowing everything) or a `sub/.git`
    # file; a later run started in sub has sub as its root, and still the repository's rules.
    repo = gate_dirs["project"]
    (repo / ".git").mkdir()
    (repo / ".gate").mkdir()
    (repo / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./.env)\n  - Read(*.vault)\n")
    sub = repo / "sub"
    (sub / ".gate").mkdir(parents=True)
    (sub / ".gate" / "rules.yaml").write_text("allow:\n  - Read\n  - Read(./**)\n")
    if forged == ".git":
        (sub / ".git").write_text("gitdir: /nowhere\n")
    root = find_root(str(sub))
    assert root == str(sub)
    policy = PolicyStore().policy_for(root)
    for path in (f"{repo}/.env", f"{sub}/k.vault", f"{repo}/deep/k.vault"):
        decision = policy.decide(Action(verb=Verb.READ, tool="Read", target=path), root)
        assert decision.effect is Effect.DENY, path
        assert decision.rule is not None and decision.rule.where.startswith(f"{repo}/.gate/")
    # The sub's own `./` means the sub: its rules are about its tree, as written.
    (sub / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./local.txt)\n")
    policy = PolicyStore().policy_for(root)
    assert (
        policy.decide(Action(verb=Verb.READ, tool="Read", target=f"{sub}/local.txt"), root).effect
        is Effect.DENY
    )
    assert (
        policy.decide(Action(verb=Verb.READ, tool="Read", target=f"{repo}/local.txt"), root).rule
        is None
    )


def test_a_gate_dir_in_a_directory_anyone_may_write_in_is_nobody_s_project(
    tmp_path: Path,
) -> None:
    # /tmp-like: another user (or a run killed there) left `.gate/` and `.claude/`; a project
    # below is neither rooted there nor held to those files' rules.
    shared = tmp_path / "tmp"
    (shared / ".gate").mkdir(parents=True)
    (shared / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./**)\n")
    (shared / ".claude").mkdir()
    (shared / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Bash"]}}')
    shared.chmod(0o1777)
    project = shared / "work" / "proj"
    project.mkdir(parents=True)
    assert find_root(str(project)) == str(project)
    layers = {r.layer for r in PolicyStore().policy_for(str(project)).rules}
    assert not layers & {"project", "project-local", "claude-project", "claude-local"}
    # Started in that directory itself, it is the user's choice: read.
    assert find_root(str(shared)) == str(shared)


def test_rules_anchor_at_the_repository_top(gate_dirs: dict[str, Path]) -> None:
    repo = gate_dirs["project"]
    (repo / ".git").mkdir()
    (repo / "pkg" / "a").mkdir(parents=True)
    for root_of in (Roots().of, find_root):
        assert root_of(str(repo / "pkg" / "a")) == str(repo)
        assert root_of(str(gate_dirs["home"])) == str(gate_dirs["home"])


def test_a_repository_made_while_gate_runs_moves_the_root(gate_dirs: dict[str, Path]) -> None:
    """The root is remembered, but a `.git` or `.gate/` made or removed in any directory
    between the working directory and its root is seen by the next lookup. Two stores
    remember apart (no cache shared across the process)."""
    roots, other = Roots(), Roots()
    repository_root = roots.of

    top = gate_dirs["project"] / "outer"
    sub = top / "pkg" / "a"
    sub.mkdir(parents=True)
    (gate_dirs["project"] / ".git").mkdir()
    assert repository_root(str(sub)) == str(gate_dirs["project"])
    (top / ".git").mkdir()  # `git init` in a directory between
    assert repository_root(str(sub)) == str(top)
    (top / "pkg" / ".gate").mkdir()  # nearer still
    assert repository_root(str(sub)) == str(top / "pkg")
    (top / "pkg" / ".gate").rmdir()
    assert repository_root(str(sub)) == str(top)
    (top / ".git").rmdir()
    (gate_dirs["project"] / ".git").rmdir()
    # No repository anywhere: the directory itself, until one is made above it.
    assert repository_root(str(sub)) == str(sub)
    (top / ".git").write_text("gitdir: elsewhere\n")  # a worktree's .git is a file
    assert repository_root(str(sub)) == str(top)
    assert other.of(str(sub)) == str(top) and other._known.keys() == {str(sub)}


def test_only_rules_gate_cannot_enforce_are_warned(
    gate_dirs: dict[str, Path], log_lines: list[str]
) -> None:
    root = gate_dirs["project"]
    (root / ".gate").mkdir()
    (root / ".gate" / "rules.yaml").write_text(
        "deny:\n  - Bash(curl *)\n  - WebFetch(domain:x.test)\n  - mcp__db\n  - 'mcp__*'\n"
        "  - Write(./x)\n  - PowerShell(Get-Content *)\n  - Agent(model:opus)\n"
        "allow:\n  - Skill(deploy *)\n"
    )
    PolicyStore().policy_for(str(root))
    warned = [line for line in log_lines if "not enforced at the wire" in line]
    assert [w.split(" (", 1)[0] for w in warned] == [
        "WARNING rule Write(./x)",
        "WARNING rule PowerShell(Get-Content *)",
    ]
    assert "write Read(...) or Edit(...)" in warned[0]
    assert ".gate/rules.yaml:6" in warned[0]


@pytest.mark.parametrize(
    ("text", "where", "words"),
    [
        ("secrets: redact\n", "t.yaml:1", "must map a tier"),
        ("secrets:\n  high: shred\n", "t.yaml:2", "'shred' is not an action"),
        ("secrets:\n  'Bad Kind': redact\n", "t.yaml:2", "not a tier or detector kind"),
    ],
)
def test_bad_secrets_settings_name_the_line(text: str, where: str, words: str) -> None:
    with pytest.raises(RuleError) as info:
        load_text(text, "t.yaml")
    assert info.value.where == where and words in info.value.message


def test_the_users_secrets_settings_replace_the_shipped_defaults(
    gate_dirs: dict[str, Path],
) -> None:
    gate_dirs["config"].mkdir()
    (gate_dirs["config"] / "rules.yaml").write_text("secrets:\n  low: allow\n  high: block\n")
    policy = PolicyStore().policy_for(None)
    assert policy.secret_action("generic-secret", "generic.assignment", "low") == "allow"
    assert policy.secret_action("github-token", "github.token", "high") == "block"
    assert policy.secret_action("slack-token", "slack.token", "high") == "block"


# Each layer answers for a finding on its own (id, else kind, else tier); the managed and
# user files' most protective answer is the policy, and a project file can only tighten it.
@pytest.mark.parametrize(
    ("managed", "user", "project", "local", "action"),
    [
        ("", "high: block", "github-token: allow", "", "block"),
        ("", "high: block", "", "github-token: allow", "block"),
        ("", "high: block", "github.token: redact", "github-token: allow", "block"),
        ("high: block", "github-token: allow", "", "", "block"),
        ("", "", "github-token: allow", "", "ask"),  # the shipped high: ask
        ("", "", "high: redact", "", "ask"),
        ("", "github-token: redact", "high: allow", "", "redact"),
        ("", "github-token: allow", "", "", "allow"),  # the person's choice
        ("", "github-token: allow", "github-token: block", "", "block"),  # a project tightens
        ("", "", "high: allow", "github.token: block", "block"),
    ],
)
def test_a_project_file_can_tighten_the_secrets_policy_but_never_loosen_it(
    gate_dirs: dict[str, Path], managed: str, user: str, project: str, local: str, action: str
) -> None:
    root = gate_dirs["project"]
    (root / ".gate").mkdir()
    gate_dirs["config"].mkdir()
    for path, setting in (
        (Path(os.environ["GATE_MANAGED_RULES"]), managed),
        (gate_dirs["config"] / "rules.yaml", user),
        (root / ".gate" / "rules.yaml", project),
        (root / ".gate" / "rules.local.yaml", local),
    ):
        if setting:
            path.write_text(f"secrets:\n  {setting}\n")
    policy = PolicyStore().policy_for(str(root))
    assert policy.secret_action("github-token", "github.token", "high") == action
