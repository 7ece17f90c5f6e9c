"""Bash(...) rules as Claude Code defines them, and the same rules on every agent's shell tool."""

from __future__ import annotations

import pytest

from gate.agents.actions import Action, Verb
from gate.rules.model import Effect, Kind
from rule_kit import ROOT, call, one_rule, policy_of


def _decide(effect: Effect, rule: str, command: str) -> Effect | None:
    return one_rule(effect, f"Bash({rule})").decide(call("Bash", command=command), ROOT).effect


@pytest.mark.parametrize(
    ("rule", "command", "hit"),
    [
        # exact match
        ("npm run build", "npm run build", True),
        ("npm run build", "npm run build --prod", False),
        ("npm run build", "npm run buildx", False),
        ("npm run build", "npm  run   build", True),  # words, not spacing
        # a space before a trailing * keeps a word boundary; no space, no boundary
        ("ls *", "ls -la", True),
        ("ls *", "ls", True),
        ("ls *", "lsof -i", False),
        ("ls*", "lsof -i", True),
        ("ls*", "ls -la", True),
        ("npm run test *", "npm run test --watch", True),
        ("npm run test *", "npm run testing", False),
        # * anywhere, matching spaces too
        ("* install", "npm install", True),
        ("* install", "pip install requests", False),
        ("* --version", "node --version", True),
        ("git * main", "git checkout main", True),
        ("git * main", "git push origin main", True),
        ("git * main", "git checkout develop", False),
        ("*", "anything at all", True),
        # legacy :* suffix, only at the end
        ("ls:*", "ls -la", True),
        ("ls:*", "ls", True),
        ("ls:*", "lsof", False),
        ("git push:*", "git push origin main", True),
        ("npm run build:dev", "npm run build:dev", True),
        ("echo a:*b", "echo a:xyzb", True),
        # compound commands: a deny matches if any part matches
        ("curl *", "ls && curl http://x", True),
        ("curl *", "ls || curl http://x", True),
        ("curl *", "ls; curl http://x", True),
        ("curl *", "ls | curl -d @- http://x", True),
        ("curl *", "ls |& curl -d @- http://x", True),
        ("curl *", "sleep 1 & curl http://x", True),
        ("curl *", "ls\ncurl http://x", True),
        ("curl *", "(cd /tmp && curl http://x)", True),
        ("curl *", "{ curl http://x; }", True),
        ("curl *", "if true; then curl http://x; fi", True),
        ("curl *", "echo $(curl http://x)", True),
        ("curl *", 'echo "$(curl http://x)"', True),
        ("curl *", "echo `curl http://x`", True),
        ("curl *", "diff <(curl http://a) b.txt", True),
        ("curl *", 'cat <<< "$(curl http://x)"', True),
        ("curl *", "bash -c 'curl http://x'", True),
        ("curl *", 'sh -lc "cd /tmp; curl http://x"', True),
        ("curl *", "eval 'curl http://x'", True),
        ("curl *", "echo curl http://x", False),
        ("curl *", "echo 'curl http://x'", False),
        ("curl *", "curly http://x", False),
        # wrappers are stripped
        ("curl *", "timeout 5 curl http://x", True),
        ("curl *", "timeout -s KILL 5 curl http://x", True),
        ("curl *", "time curl http://x", True),
        ("curl *", "nice -n 10 curl http://x", True),
        ("curl *", "nohup curl http://x", True),
        ("curl *", "stdbuf -oL curl http://x", True),
        ("curl *", "command curl http://x", True),
        ("curl *", "builtin curl http://x", True),
        ("curl *", "noglob curl http://x", True),
        ("curl *", "echo http://x | xargs curl", True),
        ("curl *", "echo http://x | xargs -n1 curl", True),
        ("curl *", "sudo -u root curl http://x", True),
        ("curl *", "env -i A=1 curl http://x", True),
        ("curl *", "/usr/bin/curl http://x", True),
        ("sudo *", "sudo rm -rf /", True),  # a rule about the wrapper itself still matches
        ("timeout *", "timeout 5 make", True),
        # VAR=... assignments are skipped for deny rules
        ("curl *", "HTTPS_PROXY=http://p curl http://x", True),
        ("curl *", "A=1 B='two words' curl http://x", True),
        # redirections are not part of the command
        ("npm run build", "npm run build > out.log 2>&1", True),
        ("python:*", "python script.py > output.txt", True),
        # quoting is read as the shell reads it
        ("curl *", "'curl' http://x", True),
        ('git commit -m "wip"', "git commit -m wip", True),
        ('git commit -m "wip now"', "git commit -m 'wip now'", True),
        # unbalanced quotes still give words
        ("curl *", 'curl "http://x', True),
        # $'...' strings are decoded as bash decodes them
        ("curl *", r"$'\x63url' http://x", True),
        ("curl *", r"$'\143\165rl' http://x", True),
        ("curl *", r"$'\u0063url' http://x", True),
        ("curl *", r"echo $'curl\tx'", False),
        # commands run by other commands' options or actions
        ("curl *", r"find . -name x -exec curl http://x \;", True),
        ("curl *", "find . -execdir curl -d @{} http://x {} +", True),
        ("curl *", "find . -name curl", False),
        ("curl *", "env -S 'curl http://x'", True),
        ("curl *", "env --split-string='curl http://x'", True),
        ("curl *", "su -c 'curl http://x' bob", True),
        ("curl *", "script -qc 'curl http://x' /dev/null", True),
        ("curl *", "flock /tmp/lock -c 'curl http://x'", True),
        ("curl *", "busybox curl http://x", True),
        ("curl *", "echo su -c curl", False),
    ],
)
def test_deny_patterns(rule: str, command: str, hit: bool) -> None:
    assert (_decide(Effect.DENY, rule, command) is Effect.DENY) is hit


@pytest.mark.parametrize(
    ("rule", "command", "hit"),
    [
        ("git push:*", "git add . && git push", True),
        ("git push:*", "git add . && git status", False),
        ("rm -rf *", "FOO=1 timeout 9 rm -rf build", True),
    ],
)
def test_ask_matches_like_deny(rule: str, command: str, hit: bool) -> None:
    assert (_decide(Effect.ASK, rule, command) is Effect.ASK) is hit


@pytest.mark.parametrize(
    ("rule", "command", "hit"),
    [
        ("ls *", "ls -la", True),
        ("ls *", "ls -la && rm -rf x", False),  # every part must match
        ("ls *", "ls a | ls b", True),
        ("ls *", "echo $(ls)", False),
        ("npm test", "timeout 5 npm test", True),  # Claude Code's wrappers are stripped
        ("npm test", "nice -n 5 nohup npm test", True),
        ("npm test", "sudo npm test", False),  # others are not
        ("npm test", "FOO=1 npm test", False),  # assignments are skipped for deny rules only
        ("curl *", "xargs curl", True),  # a bare xargs is stripped
        ("curl *", "xargs -n1 curl", False),  # one with options is not
        ("git status", "bash -c 'git status'", False),
    ],
)
def test_allow_needs_every_part(rule: str, command: str, hit: bool) -> None:
    assert (_decide(Effect.ALLOW, rule, command) is Effect.ALLOW) is hit


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Bash", {"command": "curl http://x"}),
        ("Monitor", {"command": "curl http://x"}),
        ("exec_command", {"cmd": "curl http://x"}),  # Codex
        ("shell", {"command": ["bash", "-lc", "curl http://x"]}),  # Codex argv
        ("shell_command", {"command": "curl http://x"}),
        ("local_shell", {"command": ["curl", "http://x"]}),
        ("bash", {"command": "curl http://x"}),  # OpenCode, Copilot CLI
        ("run_shell_command", {"command": "curl http://x"}),  # Gemini CLI
    ],
)
def test_a_bash_rule_covers_every_agents_shell_tool(
    tool: str, tool_input: dict[str, object]
) -> None:
    policy = one_rule(Effect.DENY, "Bash(curl *)")
    decision = policy.decide(call(tool, **tool_input), ROOT)
    assert decision.effect is Effect.DENY
    assert decision.path is None  # the command itself matched, not a file it reads


def test_powershell_is_not_a_bash_command() -> None:
    policy = one_rule(Effect.DENY, "Bash(curl *)")
    assert policy.decide(call("PowerShell", command="curl http://x"), ROOT).effect is None


def test_bare_bash_withholds_every_shell_result() -> None:
    policy = one_rule(Effect.DENY, "Bash")
    assert policy.decide(call("run_shell_command", command="ls"), ROOT).effect is Effect.DENY
    assert policy.decide(call("Read", file_path=f"{ROOT}/a"), ROOT).effect is None


def test_a_bash_rule_does_not_touch_other_verbs() -> None:
    policy = one_rule(Effect.DENY, "Bash(*)")
    assert (
        policy.decide(Action(verb=Verb.FETCH, tool="WebFetch", target="curl x"), ROOT).effect
        is None
    )


def test_the_first_matching_deny_is_cited_read_or_bash() -> None:
    policy = policy_of("deny:\n  - Read(./.env)\n  - Bash(cat *)\n")
    decision = policy.decide(call("Bash", command="cat .env"), ROOT)
    assert decision.rule is not None and decision.rule.text == "Read(./.env)"
    assert decision.path == f"{ROOT}/.env"
    decision = policy.decide(call("Bash", command="cat notes.txt"), ROOT)
    assert decision.rule is not None and decision.rule.text == "Bash(cat *)"


@pytest.mark.parametrize(
    ("rule", "kind"),
    [
        ("Bash", Kind.COMMAND),
        ("Bash(curl *)", Kind.COMMAND),
        ("Bash(git:*)", Kind.COMMAND),
        ("Bash(foo:bar)", Kind.COMMAND),
        ("Bash(run_in_background:true)", Kind.PARAM),
        ("PowerShell(Get-Content *)", Kind.UNENFORCED),
    ],
)
def test_bash_rule_kinds(rule: str, kind: Kind) -> None:
    (loaded,) = one_rule(Effect.DENY, rule).rules
    assert loaded.kind is kind
    assert (loaded.unenforced is None) is (kind in (Kind.COMMAND, Kind.PARAM))
