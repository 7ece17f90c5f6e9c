"""The shipped default pack and the engine: which actions are denied, by which rule."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from gate.agents.actions import Action, Verb
from gate.rules.engine import Policy
from gate.rules.layers import PolicyStore
from gate.rules.loader import load_text
from gate.rules.model import Effect

ROOT = "/work/proj"


@pytest.fixture
def default_policy() -> Policy:
    return PolicyStore().policy_for(ROOT)


@pytest.mark.parametrize(
    ("path", "rule"),
    [
        (f"{ROOT}/.env", "Read(./.env)"),
        (f"{ROOT}/api/.env", "Read(.env)"),
        (f"{ROOT}/.env.local", "Read(.env.*)"),
        (f"{ROOT}/.env.production", "Read(.env.*)"),
        ("~/.ssh/id_ed25519", "Read(~/.ssh/**)"),
        ("~/.ssh/config", "Read(~/.ssh/**)"),
        ("~/.aws/credentials", "Read(~/.aws/credentials)"),
        (f"{ROOT}/certs/server.pem", "Read(**/*.pem)"),
        (f"{ROOT}/deploy/id_rsa", "Read(**/id_rsa*)"),
        (f"{ROOT}/keys/id_ed25519", "Read(**/id_ed25519*)"),
        (".env", "Read(./.env)"),  # relative to the project root
    ],
)
def test_default_pack_denies(default_policy: Policy, path: str, rule: str) -> None:
    path = os.path.expanduser(path)
    decision = default_policy.decide(Action(verb=Verb.READ, tool="Read", target=path), ROOT)
    assert decision.effect is Effect.DENY
    assert decision.rule is not None and decision.rule.text == rule
    assert decision.rule.where.startswith("rules/default.yaml:")


@pytest.mark.parametrize(
    "path",
    [
        f"{ROOT}/.env.example",
        f"{ROOT}/.env.sample",
        f"{ROOT}/.env.template",
        f"{ROOT}/src/env.py",
        f"{ROOT}/README.md",
        f"{ROOT}/deploy/id_rsa.pub",
        f"{ROOT}/docs/.envrc",
        "/etc/hostname",
    ],
)
def test_default_pack_allows(default_policy: Policy, path: str) -> None:
    assert (
        default_policy.decide(Action(verb=Verb.READ, tool="Read", target=path), ROOT).effect is None
    )


def test_read_rule_covers_search_and_edit_but_not_exec(default_policy: Policy) -> None:
    for verb, tool in ((Verb.SEARCH, "Grep"), (Verb.EDIT, "Edit")):
        assert (
            default_policy.decide(Action(verb=verb, tool=tool, target=f"{ROOT}/.env"), ROOT).effect
            is Effect.DENY
        )
    assert (
        default_policy.decide(Action(verb=Verb.EXEC, tool="Bash", target="cat .env"), ROOT).effect
        is None
    )


def test_a_denied_directory_denies_what_is_beneath_it() -> None:
    policy = Policy(rules=tuple(load_text("deny:\n  - Read(./secrets)\n", "t.yaml")))
    inside = Action(verb=Verb.READ, tool="Read", target=f"{ROOT}/secrets/a/b.txt")
    assert policy.decide(inside, ROOT).effect is Effect.DENY
    assert (
        policy.decide(Action(verb=Verb.READ, tool="Read", target=f"{ROOT}/secretsX"), ROOT).effect
        is None
    )


def test_deny_beats_allow_whatever_the_order() -> None:
    text = "allow:\n  - Read(./.env)\ndeny:\n  - Read(./.env)\nask:\n  - Read(./.env)\n"
    policy = Policy(rules=tuple(load_text(text, "t.yaml")))
    decision = policy.decide(Action(verb=Verb.READ, tool="Read", target=f"{ROOT}/.env"), ROOT)
    assert decision.effect is Effect.DENY and decision.rule is not None
    assert decision.rule.line == 4


def test_symlink_to_a_denied_file_is_denied(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("X=1")
    (tmp_path / "innocent.txt").symlink_to(tmp_path / ".env")
    policy = PolicyStore().policy_for(str(tmp_path))
    link = Action(verb=Verb.READ, tool="Read", target=str(tmp_path / "innocent.txt"))
    decision = policy.decide(link, str(tmp_path))
    assert decision.effect is Effect.DENY


def test_unknown_root_matches_relative_patterns_anywhere(default_policy: Policy) -> None:
    decision = (
        PolicyStore()
        .policy_for(None)
        .decide(Action(verb=Verb.READ, tool="Read", target="/x/y/.env"), None)
    )
    assert decision.effect is Effect.DENY


@pytest.mark.parametrize(
    ("spec", "path", "hit"),
    [
        ("//etc/secrets/**", "/etc/secrets/a", True),
        ("//etc/secrets/**", f"{ROOT}/etc/secrets/a", False),
        ("/config/*.json", f"{ROOT}/config/prod.json", True),
        ("/config/*.json", f"{ROOT}/config/sub/prod.json", False),
        ("src/**/*.key", f"{ROOT}/a/src/x/y.key", True),
        ("*.env", f"{ROOT}/deep/down/prod.env", True),
        ("./build/", f"{ROOT}/build/out.txt", True),
    ],
)
def test_path_pattern_anchors(spec: str, path: str, hit: bool) -> None:
    policy = Policy(rules=tuple(load_text(f"deny:\n  - Read({spec})\n", "t.yaml", root=ROOT)))
    assert (
        policy.decide(Action(verb=Verb.READ, tool="Read", target=path), ROOT).effect is Effect.DENY
    ) is hit


def test_a_symlink_named_like_an_exception_is_still_denied(tmp_path: Path) -> None:
    (tmp_path / ".env.production").write_text("X=1")
    (tmp_path / ".env.example").symlink_to(tmp_path / ".env.production")
    policy = PolicyStore().policy_for(str(tmp_path))
    action = Action(verb=Verb.READ, tool="Read", target=str(tmp_path / ".env.example"))
    assert policy.decide(action, str(tmp_path)).effect is Effect.DENY


def test_a_file_later_replaced_by_a_symlink_is_decided_again(tmp_path: Path) -> None:
    (tmp_path / ".env.production").write_text("X=1")
    notes = tmp_path / "notes.txt"
    notes.write_text("harmless")
    policy = PolicyStore().policy_for(str(tmp_path))
    action = Action(verb=Verb.READ, tool="Read", target=str(notes))
    assert policy.decide(action, str(tmp_path)).effect is None
    notes.unlink()
    notes.symlink_to(tmp_path / ".env.production")
    assert policy.decide(action, str(tmp_path)).effect is Effect.DENY


def test_home_relative_paths_are_expanded(default_policy: Policy) -> None:
    action = Action(verb=Verb.READ, tool="Read", target="~/.aws/credentials")
    assert default_policy.decide(action, ROOT).effect is Effect.DENY
