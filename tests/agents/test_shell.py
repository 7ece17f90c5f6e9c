"""Which files a shell command reads."""

from __future__ import annotations

import os

import pytest

from gate.agents.shell import reads


@pytest.mark.parametrize(
    ("command", "expected"),
    [
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
        ("echo hi > .env", ["/p/.env"]),  # named in the text: taken to read it
        ("cat a.txt 2>&1 >> log.txt", ["/p/a.txt", "/p/2"]),  # over-approximates: harmless
        ('cat "unclosed .env', ["/p/unclosed", "/p/.env"]),
        ("git status\ncat .env", ["/p/.env"]),
        ("if true; then cat .env; fi", ["/p/.env"]),
        ("for f in *; do echo $f; done", []),
        (r"cat $'.e\x6ev'", ["/p/.env"]),  # bash's $'...' strings are decoded
        (r"$'\x63at' .env", ["/p/.env"]),
    ],
)
def test_reads(command: str, expected: list[str]) -> None:
    # The readers' operands come first; every other path-like piece of the text follows.
    got = list(reads(command, "/p"))
    assert got[: len(expected)] == [os.path.expanduser(e) for e in expected]
    if not expected:
        assert not any(p.endswith(".env") for p in got)


@pytest.mark.parametrize(
    ("command", "named"),
    [
        ("python3 -c \"open('.env').read()\"", "/p/.env"),
        ("git show HEAD~2:config/.env", "/p/config/.env"),
        ("node -e 'require(`fs`).readFileSync(`/etc/shadow`)'", "/etc/shadow"),
        ("cmd --env-file=secrets/.env.prod", "/p/secrets/.env.prod"),
        ("cd sub && python3 -c \"open('../.env')\"", "/p/.env"),
        ("ssh -i ~/.ssh/id_ed25519 host", "~/.ssh/id_ed25519"),
        ("docker compose config", "/p/.env"),
    ],
)
def test_a_path_named_anywhere_is_a_read(command: str, named: str) -> None:
    assert os.path.expanduser(named) in reads(command, "/p")


def test_globs_expand_against_the_disk(tmp_path: object) -> None:
    from pathlib import Path

    root = Path(str(tmp_path))
    (root / ".env").write_text("K=v\n")
    (root / "a.txt").write_text("x\n")
    got = reads("cat .e* && head ./.[e]nv", str(root))
    assert str(root / ".env") in got and str(root / "a.txt") not in got


def test_shell_dash_c_is_parsed_as_a_command_line() -> None:
    assert reads('bash -c "cd conf && cat .env"', "/p")[0] == "/p/conf/.env"
    assert reads("sh -c 'grep -v x < .env'", "/p")[0] == "/p/.env"


@pytest.mark.parametrize(
    "command",
    [
        "sudo -u root cat .env",
        "timeout -s KILL 5 cat .env",
        "env -u FOO cat .env",
        "nice -n 5 head .env",
    ],
)
def test_wrappers_with_valued_options(command: str) -> None:
    assert reads(command, "/p") == ("/p/.env",)


def test_every_path_of_a_many_files_read_is_decided(gate_dirs: dict[str, object]) -> None:
    from gate.agents.tools import action
    from gate.rules.layers import PolicyStore

    root = str(gate_dirs["project"])
    act = action("read_many_files", {"paths": ["README.md", ".env"]}, root)
    decision = PolicyStore().policy_for(root).decide(act, root)
    assert decision.rule is not None and decision.path == ".env"
