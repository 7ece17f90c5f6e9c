"""Tool calls are mapped to actions once and remembered: only an identical call (name, whole
input in its order, working directory, home) gets a remembered action."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.agents import tools
from gate.agents.actions import Verb


def test_a_resent_call_gets_the_same_action() -> None:
    first = tools.action("Bash", {"command": "cat .env"}, "/p")
    assert tools.action("Bash", {"command": "cat .env"}, "/p") is first
    assert first.reads == ("/p/.env",)


@pytest.mark.parametrize(
    ("name", "tool_input", "cwd", "reads"),
    [
        ("Bash", {"command": "cat .env.local"}, "/p", ("/p/.env.local",)),  # another input
        ("Bash", {"command": "cat .env"}, "/q", ("/q/.env",)),  # another directory
        ("Bash", {"command": "cat .env", "workdir": "/w"}, "/p", ("/w/.env",)),  # another key
    ],
)
def test_any_difference_is_worked_out_again(
    name: str, tool_input: dict[str, str], cwd: str, reads: tuple[str, ...]
) -> None:
    tools.action("Bash", {"command": "cat .env"}, "/p")
    assert tools.action(name, tool_input, cwd).reads == reads


def test_key_order_and_home_are_part_of_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = tools.action("Read", {"file_path": "/x", "limit": 5}, "/p")
    b = tools.action("Read", {"limit": 5, "file_path": "/x"}, "/p")
    assert a.params == (("file_path", "/x"), ("limit", "5"))
    assert b.params == (("limit", "5"), ("file_path", "/x"))
    monkeypatch.setenv("HOME", str(tmp_path / "one"))
    one = tools.action("Bash", {"command": "cat ~/.aws/credentials"}, "/p")
    monkeypatch.setenv("HOME", str(tmp_path / "two"))
    two = tools.action("Bash", {"command": "cat ~/.aws/credentials"}, "/p")
    assert one.reads == (f"{tmp_path}/one/.aws/credentials",)
    assert two.reads == (f"{tmp_path}/two/.aws/credentials",)


def test_input_that_is_not_plain_json_is_still_mapped() -> None:
    surrogate = {"file_path": "/p/\ud800.env"}  # orjson cannot encode it: no memo, same answer
    act = tools.action("Read", surrogate, "/p")
    assert act.verb is Verb.READ and act.target == "/p/\ud800.env"
