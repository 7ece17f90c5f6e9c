"""Which files a shell command reads."""

from __future__ import annotations

import os

import pytest

from gate.agents.shell import reads


@pytest.mark.parametrize(("command", "expected"), [
    ("cat .env", ["/p/.env"]),
    ("cd sub && cat .env", ["/p/sub/.env"]),
    ("cd /etc; cat hosts", ["/etc/hosts"]),
    ("cat<.env|head", ["/p/.env"]),
    ("wc -l < .env", ["/p/.env"]),
    ('V=.env; cat "$V"', ["/p/.env"]),
    ("F=.env && head -5 ${F}", ["/p/.env"]),
    ("echo $(cat .env)", ["/p/.env"]),
    ("{ cat .env; }", ["/p/.env"]),
    ("(cd x; tail -f y)", ["/p/x/y"]),
    ("timeout 5 cat ~/.ssh/id_rsa", ["~/.ssh/id_rsa"]),
    ("env -i A=1 nice -n 5 cat .env", ["/p/.env"]),
    ("grep -e KEY .env", ["/p/KEY", "/p/.env"]),
    ("grep -r API_KEY src .env", ["/p/src", "/p/.env"]),
    ("sed -n 1,5p config/.env.local", ["/p/config/.env.local"]),
    ("source .env && env", ["/p/.env"]),
    (". ./.env", ["/p/.env"]),
    ("base64 .env | xxd", ["/p/.env"]),
    ("ls -la && echo done", []),
    ("echo hi > .env", []),
    ("cat a.txt 2>&1 >> log.txt", ["/p/a.txt", "/p/2"]),  # over-approximates: harmless
    ('cat "unclosed .env', ["/p/unclosed", "/p/.env"]),
    ("git status\ncat .env", ["/p/.env"]),
    ("if true; then cat .env; fi", ["/p/.env"]),
    ("for f in *; do echo $f; done", []),
    (r"cat $'.e\x6ev'", ["/p/.env"]),  # bash's $'...' strings are decoded
    (r"$'\x63at' .env", ["/p/.env"]),
])
def test_reads(command: str, expected: list[str]) -> None:
    assert list(reads(command, "/p")) == [os.path.expanduser(e) for e in expected]


def test_shell_dash_c_is_parsed_as_a_command_line() -> None:
    assert reads('bash -c "cd conf && cat .env"', "/p") == ("/p/conf/.env",)
    assert reads("sh -c 'grep -v x < .env'", "/p") == ("/p/.env",)


@pytest.mark.parametrize("command", ["sudo -u root cat .env", "timeout -s KILL 5 cat .env",
                                     "env -u FOO cat .env", "nice -n 5 head .env"])
def test_wrappers_with_valued_options(command: str) -> None:
    assert reads(command, "/p") == ("/p/.env",)


def test_every_path_of_a_many_files_read_is_decided(gate_dirs: dict[str, object]) -> None:
    from gate.agents.tools import action
    from gate.rules.layers import PolicyStore

    root = str(gate_dirs["project"])
    act = action("read_many_files", {"paths": ["README.md", ".env"]}, root)
    decision = PolicyStore().policy_for(root).decide(act, root)
    assert decision.rule is not None and decision.path == ".env"
