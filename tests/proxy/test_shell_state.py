"""A file sourced in one shell call is read by a later call that prints the environment:
agents keep one shell across calls, so `env` after `source .env` prints the file."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.agents import shell_state, tools
from messages import conversation, tool_turn

WITHHELD = "[gate: content withheld. Bash command"
SOURCES = [
    "source .env",
    "set -a; . ./.env; set +a",
    "export $(grep -v '^#' .env | xargs)",
    'eval "$(cat .env)"',
    "cd config && source ../.env",
]
DUMPS = [
    "env",
    "printenv",
    "printenv | sort",
    "export -p",
    "set",
    "declare -px",
    "env | grep -i key",
    "python3 -c 'import os; print(os.environ)'",
    "node -e 'console.log(process.env)'",
    "cat /proc/self/environ",
    "ls && printenv",
]


def _env_dump(secret: str) -> str:
    # The value as no index finds it: what a later call prints is decided by the call.
    return f"HOME=/home/u\nSTRIPE_KEY_REVERSED={secret[::-1][:6]}\nPATH=/usr/bin\n"


@pytest.mark.parametrize("source", SOURCES)
@pytest.mark.parametrize("dump", DUMPS)
def test_a_later_environment_dump_reads_the_sourced_file(
    gate_dirs: dict[str, Path], source: str, dump: str
) -> None:
    project = str(gate_dirs["project"])
    (gate_dirs["project"] / ".env").write_text("STRIPE_KEY=x\n")
    actions = [tools.action("Bash", {"command": c}, project) for c in (source, "ls", dump)]
    carried = shell_state.carry(actions)
    assert f"{project}/.env" in carried[2].reads
    assert f"{project}/.env" not in carried[1].reads  # `ls` prints no environment


def test_without_a_source_a_dump_reads_nothing(gate_dirs: dict[str, Path]) -> None:
    project = str(gate_dirs["project"])
    actions = [
        tools.action("Bash", {"command": c}, project)
        for c in ("cat README.md", "export FOO=1", "printenv")
    ]
    assert shell_state.carry(actions)[2].reads == ()


def test_printenv_after_source_is_withheld_whole_in_one_body_and_the_next_turn(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    secret = fake_secret("sk_live_")
    (project / ".env").write_text(f"STRIPE_KEY={secret}\n")
    first = tool_turn("toolu_1", "Bash", {"command": "set -a; source .env; set +a"}, "")
    dump = tool_turn("toolu_2", "Bash", {"command": "printenv"}, _env_dump(secret))
    client.messages.create(**conversation(str(project), first, dump))
    assert provider.seen[-1].json()["messages"][4]["content"][0]["content"].startswith(WITHHELD)
    # The same conversation a turn later (its last turn taken up), and one more dump.
    again = tool_turn("toolu_3", "Bash", {"command": "env | sort"}, _env_dump(secret))
    client.messages.create(**conversation(str(project), first, dump, again))
    sent = provider.seen[-1].json()["messages"]
    assert sent[4]["content"][0]["content"].startswith(WITHHELD)
    assert sent[6]["content"][0]["content"].startswith(WITHHELD)
    assert secret[::-1][:6] not in provider.seen[-1].body.decode()


def test_printenv_with_no_source_before_is_sent(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    (project / ".env").write_text(f"STRIPE_KEY={fake_secret('sk_live_')}\n")
    out = "HOME=/home/u\nPATH=/usr/bin\n"
    client.messages.create(
        **conversation(str(project), tool_turn("toolu_1", "Bash", {"command": "printenv"}, out))
    )
    assert provider.seen[-1].json()["messages"][2]["content"][0]["content"] == out
