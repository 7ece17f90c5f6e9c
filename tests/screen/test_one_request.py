"""Within one request each item is serialised once for every memo that looks it up; the
screens still catch, turn after turn, what a fresh screening catches."""

from __future__ import annotations

import json
import marshal
import random
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from gate.providers import history
from gate.providers.history import Memo
from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import IndexStore
from gate.screen.request import Outbound, Screens, Verdict, screen
from messages import conversation, tool_turn
from screen.secrets_corpus import Gen

ENV_LINE = "DATABASE_URL=postgres://app:{}@db.internal:5432/app"

Place = Callable[[list[dict[str, Any]], str], None]


def _in_result_extra(turn: list[dict[str, Any]], value: str) -> None:
    turn[1]["content"][0]["x_note"] = {"seen": [value]}  # unknown field of a result block


def _in_text(turn: list[dict[str, Any]], value: str) -> None:
    turn[0]["content"].insert(0, {"type": "text", "text": f"I found {value} earlier"})


def _in_input(turn: list[dict[str, Any]], value: str) -> None:
    turn[0]["content"][0]["input"]["description"] = f"check {value}"


def _in_unknown_block(turn: list[dict[str, Any]], value: str) -> None:
    turn[1]["content"].append({"type": "future_block", "data": {"deep": value}})


PLACES = {
    "result-extra": _in_result_extra,
    "text": _in_text,
    "tool-input": _in_input,
    "unknown-block": _in_unknown_block,
}


def _turns(project: Path, token: str, denied: str, place: Place) -> list[bytes]:
    """Three turns of one session: each resends the last one's messages and adds a call; the
    .env read (withheld, edited in place) carries the token, the next call a denied value."""
    env = tool_turn("toolu_env", "Read", {"file_path": f"{project}/.env"}, "1\t" + denied)
    place(env, token)
    later = tool_turn("toolu_ls", "Bash", {"command": "ls"}, "a.py b.py")
    place(later, ENV_LINE.format(denied.split(":")[2].split("@")[0]))
    extra = tool_turn("toolu_cat", "Bash", {"command": "cat notes.txt"}, f"note {token}")
    bodies = [
        conversation(str(project), env),
        conversation(str(project), env, later),
        conversation(str(project), env, later, extra),
    ]
    return [json.dumps(b).encode() for b in bodies]


def _screen(project: Path, screens: Screens, body: bytes) -> Verdict:
    return screen(
        Outbound(path="/v1/messages", body=body, agent="claude-code", project_root=str(project)),
        PolicyStore(),
        screens,
    )


@pytest.mark.parametrize("where", PLACES)
def test_every_turn_is_screened_as_a_fresh_screening_would(
    gate_dirs: dict[str, Path], where: str
) -> None:
    project, data = gate_dirs["project"], gate_dirs["data"]
    data.mkdir(mode=0o700)
    password = "pw" + random.SystemRandom().randbytes(8).hex()
    denied = ENV_LINE.format(password)
    (project / ".env").write_text(denied + "\n")
    token = Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")
    index, secrets = IndexStore(), SecretScreen.load(data)
    screens = Screens(index, secrets)
    # Nothing remembered: no strings' outcomes, no walks.
    nothing = Screens(index, secrets, items=None, walks=None)
    for body in _turns(project, token, denied, PLACES[where]) * 2:  # each turn resent too
        remembered = _screen(project, screens, body)
        fresh = _screen(project, nothing, body)
        assert remembered == fresh
        assert remembered.body is not None
        assert token.encode() not in remembered.body and password.encode() not in remembered.body
        assert any(w.call_id == "toolu_env" for w in remembered.withheld)


def test_an_item_is_serialised_once_per_request(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []

    def counting(item: Any) -> bytes:
        seen.append(id(item))
        return marshal.dumps(item)

    monkeypatch.setattr(history, "marshal", SimpleNamespace(dumps=counting))
    memo, item = Memo(), {"k": ["v"]}
    with history.one_request(memo):
        assert memo.remembered("a", item, lambda: 1) == 1
        assert memo.remembered("b", item, lambda: 2) == 2
    assert seen == [id(item)]
    memo.remembered("a", item, lambda: 3)  # outside a request: serialised every time
    assert seen == [id(item)] * 2


def test_an_item_edited_in_place_is_serialised_again() -> None:
    memo, item = Memo(), {"k": "before"}
    memo.remembered("a", {"k": "after"}, lambda: "walked after")
    with history.one_request(memo):
        assert memo.remembered("a", item, lambda: "walked before") == "walked before"
        item["k"] = "after"
        history.edited([item])
        # Serialised again: it is now the item walked as "walked after", not "before".
        assert memo.remembered("a", item, lambda: "fresh") == "walked after"
        # Not reported: the request keeps its last serialisation of the item. Screens
        # report every in-place edit they make between two lookups (request._decide).
        item["k"] = "third"
        assert memo.remembered("a", item, lambda: "unreported") == "walked after"
        history.edited([item])
        assert memo.remembered("a", item, lambda: "third") == "third"
