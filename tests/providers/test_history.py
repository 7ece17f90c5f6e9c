"""A message resent unchanged reuses its remembered walk: the result is the one a fresh walk
gives, tool inputs come from the body being screened, and any change is walked again."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Hashable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conftest import fake_secret
from gate.providers import anthropic, history, openai_chat, openai_responses
from gate.providers.history import Memo
from gate.providers.segments import Walk, long_strings
from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen
from gate.screen.request import Outbound, Screens, screen
from messages import conversation, tool_turn

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "claude-code"


def _bodies() -> list[dict[str, Any]]:
    secret = fake_secret("sk-")
    built = conversation(
        "/work/p",
        tool_turn("toolu_1", "Read", {"file_path": "/work/p/.env"}, f"TOKEN={secret}"),
        tool_turn(
            "toolu_2",
            "Bash",
            {"command": "cat .env", "cwd": "/work/p"},
            [
                {"type": "text", "text": f"TOKEN={secret}"},
                {"type": "image", "source": {"type": "base64", "data": "QUJD" * 10}},
            ],
        ),
        [
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "hmm " * 5, "signature": "c2ln" * 8},
                    {"type": "text", "text": "done", "citations": [{"cited_text": secret}]},
                ],
            }
        ],
    )
    built["system"] = [
        {"type": "text", "text": "x-anthropic-billing-header: cc_version=2"},
        {"type": "text", "text": "You are Claude Code."},
    ]
    built["tools"] = [{"name": "Read", "input_schema": {"properties": {"file_path": {}}}}]
    built["metadata"] = {"user_id": "user_" + "ab" * 20}
    corpus = [json.loads(p.read_text())["body"] for p in sorted(CORPUS.glob("*.json"))]
    return [built, *corpus]


@pytest.fixture(autouse=True)
def memo() -> Iterator[Memo]:
    """Each test is one gate's request, whose walks are remembered in its own memo."""
    memo = Memo()
    with history.one_request(memo):
        yield memo


def _fresh_walk(body: dict[str, Any]) -> Walk:
    with history.one_request(None):
        return anthropic.walk(body)


def _fresh_strings(body: dict[str, Any]) -> tuple[list[Any], list[str]]:
    with history.one_request(None):
        return long_strings(body, 8)


@pytest.mark.parametrize("body", _bodies(), ids=lambda b: str(b.get("model")))
def test_a_remembered_walk_is_the_fresh_walk(body: dict[str, Any]) -> None:
    fresh, strings = _fresh_walk(body), _fresh_strings(body)
    anthropic.walk(body)
    long_strings(body, 8)  # both remembered now
    again = copy.deepcopy(body)  # the next turn: the same history, parsed anew
    assert anthropic.walk(again) == fresh
    assert long_strings(again, 8) == strings


def test_tool_inputs_come_from_the_body_being_screened() -> None:
    body = _bodies()[0]
    anthropic.walk(body)
    # This turn's screening edits the body in place (a redaction inside a call's input)...
    body["messages"][3]["content"][0]["input"]["command"] = "[gate: redacted]"
    # ...and the next turn resends the original: its call is decided on what it says.
    nxt = _bodies()[0]
    calls = {c.id: c for c in anthropic.walk(nxt).calls}
    assert calls["toolu_2"].input == {"command": "cat .env", "cwd": "/work/p"}
    assert calls["toolu_2"].input is nxt["messages"][3]["content"][0]["input"]


@pytest.mark.parametrize(
    "edit",
    [
        lambda b, s: b["messages"][2]["content"][0].update(content=f"TOKEN={s}"),
        lambda b, s: b["messages"][5]["content"][1].update(text=f"done {s}"),
        lambda b, s: b["messages"][0].update(content=[{"type": "text", "text": s}]),
        lambda b, s: b["system"][1].update(text=f"You are Claude Code. {s}"),
        lambda b, s: b["tools"][0]["input_schema"].update(description=s),
    ],
    ids=["tool-result", "text", "shape", "system", "tools"],
)
def test_any_change_to_a_resent_item_is_walked_again(edit: Any) -> None:
    anthropic.walk(_bodies()[0])
    long_strings(_bodies()[0], 8)
    body, secret = _bodies()[0], fake_secret("new-")
    edit(body, secret)
    assert any(secret in s.text for s in anthropic.walk(body).segments)
    assert any(secret in t for _, t in long_strings(body, 8)[0])
    assert anthropic.walk(body) == _fresh_walk(body)


def test_a_duplicate_result_is_refused_when_remembered_too() -> None:
    body = _bodies()[0]
    anthropic.walk(body)
    body["messages"].append(copy.deepcopy(body["messages"][2]))  # a second toolu_1 result
    with pytest.raises(ValueError, match="two tool results answer toolu_1"):
        anthropic.walk(body)


def test_the_memo_is_bounded_and_skips_what_is_not_plain_json() -> None:
    memo = Memo(max_bytes=64)
    calls: list[int] = []

    def compute() -> int:
        calls.append(1)
        return len(calls)

    assert memo.remembered("a", {"k": "v"}, compute) == 1
    assert memo.remembered("a", {"k": "v"}, compute) == 1  # remembered
    assert memo.remembered("b", {"k": "x" * 100}, compute) == 2  # over the bound: all forgotten
    assert memo.remembered("a", {"k": "v"}, compute) == 3
    odd = {"k": object()}  # not plain data: worked out every time
    assert memo.remembered("c", odd, compute) == 4
    assert memo.remembered("c", odd, compute) == 5
    lone = {"k": "\ud800"}  # a lone surrogate (the standard parser allows it) is plain data
    assert memo.remembered("d", lone, compute) == 6
    assert memo.remembered("d", {"k": "\ud800"}, compute) == 6


@pytest.mark.parametrize(
    ("first", "then"),
    [
        ({"id": 1}, {"id": True}),
        ({"id": 1}, {"id": 1.0}),
        ({"n": 0}, {"n": False}),
        ({"n": 0.0}, {"n": -0.0}),
        ({"a": "x", "b": "y"}, {"b": "y", "a": "x"}),
        ({"k": None}, {"k": "None"}),
        ({"k": [1, 2]}, {"k": (1, 2)}),
    ],
    ids=["int-bool", "int-float", "zero-false", "zero-signs", "key-order", "null", "list-tuple"],
)
def test_items_equal_in_python_but_not_identical_are_walked_again(first: Any, then: Any) -> None:
    memo = Memo()
    assert memo.remembered("a", first, lambda: "first") == "first"
    assert memo.remembered("a", then, lambda: "then") == "then"


_WALKERS = {
    "anthropic": anthropic,
    "openai-chat": openai_chat,
    "openai-responses": openai_responses,
}


def _corpus() -> list[Any]:
    return [
        pytest.param(_WALKERS[d["format"]], d["body"], id=f"{p.parent.name}/{p.stem}")
        for p in sorted(CORPUS.parent.glob("*/*.json"))
        if (d := json.loads(p.read_text()))["format"] in _WALKERS
    ]


@pytest.mark.parametrize(("walker", "body"), _corpus())
def test_every_remembered_format_walks_like_a_fresh_walk(walker: Any, body: Any) -> None:
    with history.one_request(None):
        fresh = walker.walk(copy.deepcopy(body))
    walked = copy.deepcopy(body)
    walker.walk(walked)
    _scribble(walked)  # screening edits the body it walked, in place
    remembered = walker.walk(copy.deepcopy(body))  # the next turn resends the original
    assert remembered == fresh  # nothing remembered was a part of the edited body


def _scribble(node: Any) -> None:
    items = (
        node.items()
        if isinstance(node, dict)
        else enumerate(node)
        if isinstance(node, list)
        else ()
    )
    for key, value in list(items):
        if isinstance(value, str):
            node[key] = "edited"
        else:
            _scribble(value)


def _chat(command: str) -> dict[str, Any]:
    return {
        "model": "gpt-test",
        "messages": [
            {"role": "user", "content": "list the env"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "TOKEN=" + "x" * 20},
        ],
    }


def _responses(command: str) -> dict[str, Any]:
    return {
        "model": "gpt-test",
        "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {
                "type": "function_call",
                "call_id": "call_1",
                "name": "shell_command",
                "arguments": json.dumps({"command": command}),
            },
            {"type": "function_call_output", "call_id": "call_1", "output": "TOKEN=" + "x" * 20},
        ],
    }


@pytest.mark.parametrize(
    ("walker", "build"), [(openai_chat, _chat), (openai_responses, _responses)]
)
def test_a_changed_call_is_decided_on_what_it_says_now(walker: Any, build: Any) -> None:
    walker.walk(build("cat README.md"))
    (call,) = walker.walk(build("cat .env")).calls
    assert call.input == {"command": "cat .env"} and call.result is not None
    segs = walker.walk(build("cat .env")).segments
    assert any("cat .env" in s.text for s in segs)
    assert not any("README" in s.text for s in segs)


T = TypeVar("T")


class Counting(Memo):
    """A memo that counts the walks it had to work out (not found remembered)."""

    def __init__(self) -> None:
        super().__init__()
        self.walked = 0

    def remembered(self, key: Hashable, item: Any, compute: Callable[[], T]) -> T:
        def counted() -> T:
            self.walked += 1
            return compute()

        return super().remembered(key, item, counted)


def test_two_gates_in_one_process_share_no_walks(gate_dirs: dict[str, Path]) -> None:
    """A gate's screening remembers walks in its own Screens' memo: another gate in the same
    process (or a walk outside any request) learns nothing from it."""
    gate_dirs["data"].mkdir(mode=0o700)
    secrets = SecretScreen.load(gate_dirs["data"])
    one, two = Counting(), Counting()
    gates = [Screens(None, secrets, walks=memo) for memo in (one, two)]
    req = Outbound(
        path="/v1/messages",
        body=json.dumps(_bodies()[0]).encode(),
        agent="claude-code",
        project_root=None,
    )
    screen(req, PolicyStore(), gates[0])
    first = one.walked
    assert first > 0 and len(one) > 0 and two.walked == len(two) == 0
    screen(req, PolicyStore(), gates[0])
    assert one.walked < 2 * first  # the same gate's next turn reuses its walks
    with history.one_request(None):
        anthropic.walk(_bodies()[0])
    screen(req, PolicyStore(), gates[1])
    assert two.walked == first  # the other gate's walks were not there to reuse


def test_a_listed_item_is_found_by_identity_once_a_lookup_misses_the_others() -> None:
    """`listed` items are frozen like `frozen` ones, indexed only when first needed: the
    memo finds them again by identity (no serialisation), an equal copy by its bytes."""
    memo = history.Memo()
    system, msg = {"text": "sys"}, {"role": "user", "content": "hi"}
    calls: list[str] = []

    def walk(name: str) -> str:
        calls.append(name)
        return name

    for _ in range(2):
        with history.one_request(memo, [system], listed=[msg]):
            assert history.remembered("system", system, lambda: walk("system")) == "system"
            assert history.remembered("msg", msg, lambda: walk("msg")) == "msg"
            assert history.remembered("msg", dict(msg), lambda: walk("copy")) == "msg"
    assert calls == ["system", "msg"]
