"""A gate's tool calls are mapped to actions once and remembered, by that gate alone: only an
identical call (name, whole input in its order, working directory, home) gets a remembered
action, and two gates share nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.agents import tools
from gate.agents.action_memo import ActionMemo
from gate.agents.actions import Verb
from gate.screen.request import Screens


def test_a_resent_call_gets_the_same_action() -> None:
    memo = ActionMemo()
    first = memo.action("Bash", {"command": "cat .env"}, "/p")
    assert memo.action("Bash", {"command": "cat .env"}, "/p") is first
    assert first.reads == ("/p/.env",)
    assert first == tools.action("Bash", {"command": "cat .env"}, "/p")


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
    memo = ActionMemo()
    memo.action("Bash", {"command": "cat .env"}, "/p")
    assert memo.action(name, tool_input, cwd).reads == reads


def test_key_order_and_home_are_part_of_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    memo = ActionMemo()
    a = memo.action("Read", {"file_path": "/x", "limit": 5}, "/p")
    b = memo.action("Read", {"limit": 5, "file_path": "/x"}, "/p")
    assert a.params == (("file_path", "/x"), ("limit", "5"))
    assert b.params == (("limit", "5"), ("file_path", "/x"))
    monkeypatch.setenv("HOME", str(tmp_path / "one"))
    one = memo.action("Bash", {"command": "cat ~/.aws/credentials"}, "/p")
    monkeypatch.setenv("HOME", str(tmp_path / "two"))
    two = memo.action("Bash", {"command": "cat ~/.aws/credentials"}, "/p")
    assert one.reads == (f"{tmp_path}/one/.aws/credentials",)
    assert two.reads == (f"{tmp_path}/two/.aws/credentials",)


def test_input_that_is_not_plain_json_is_still_mapped() -> None:
    memo = ActionMemo()
    surrogate = {"file_path": "/p/\ud800.env"}  # orjson cannot encode it: no memo, same answer
    act = memo.action("Read", surrogate, "/p")
    assert act.verb is Verb.READ and act.target == "/p/\ud800.env"
    assert len(memo) == 0


def test_a_full_memo_starts_again() -> None:
    memo = ActionMemo(max_actions=2)
    for n in range(5):
        memo.action("Bash", {"command": f"ls {n}"}, "/p")
        assert 1 <= len(memo) <= 2


def test_each_gate_has_its_own_memo() -> None:
    one, two = Screens(), Screens()
    assert one.actions is not None and two.actions is not None
    one.actions.action("Bash", {"command": "cat .env"}, "/p")
    assert len(one.actions) == 1 and len(two.actions) == 0
