"""A conversation's frozen prefix taken whole from its last turn (gate/screen/prefix.py):
only while nothing it depends on changed. An edit inside the prefix (a walked string, a
field no walker knows), a rule file, a denied file, or another conversation's body is
screened again, and every verdict is the one a screening that keeps nothing gives."""

from __future__ import annotations

import copy
import random
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import IndexStore
from gate.screen.prefix import Conversation, Conversations, same_prefix
from gate.screen.request import Blocked, Outbound, Screens, Verdict, screen
from screen.test_item_cache import PATHS, Talk


@dataclass
class _Gate:
    """A gate's screens kept across turns (with its own PolicyStore: the very Policy objects
    across turns, or nothing is ever reused), and screens that keep nothing."""

    kept: Screens
    nothing: Screens
    convs: Conversations
    policies: PolicyStore = field(default_factory=PolicyStore)

    def both(self, req: Outbound) -> Verdict | str:
        """The verdict with the prefix kept, checked against one that keeps nothing."""
        got, want = (
            _verdict(req, self.policies, self.kept),
            _verdict(req, PolicyStore(), self.nothing),
        )
        assert got == want
        return got


def _verdict(req: Outbound, policies: PolicyStore, screens: Screens) -> Verdict | str:
    try:
        return screen(req, policies, screens)
    except Blocked as exc:
        return f"blocked: {exc}"


def _gate(gate_dirs: dict[str, Path], convs: Conversations | None = None) -> tuple[Path, _Gate]:
    project, data = gate_dirs["project"], gate_dirs["data"]
    data.mkdir(mode=0o700)
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("ask:\n  - Read(./notes.txt)\n")
    index, secrets = IndexStore(projects=(str(project),)), SecretScreen.load(data)
    convs = Conversations() if convs is None else convs
    kept = Screens(index, secrets, conversations=convs)
    nothing = Screens(index, secrets, items=None, walks=None, bodies=None)
    return project, _Gate(kept, nothing, convs)


def _history(talk: Talk) -> None:
    for n in range(12):
        talk.call("Bash", {"command": f"ls dir{n}"}, f"file{n}.py", extra={"x_note": f"n {n}"})
        talk.say(f"and now step {n}")


def _bound(gate_dirs: dict[str, Path], fmt: str, seed: str) -> tuple[Path, _Gate, Talk, str]:
    """A gate, and a session with a history whose project denies its `.env` (a password in
    it), and another password to put in the session."""
    project, gate = _gate(gate_dirs)
    talk = Talk(fmt, project, random.Random(f"{seed}{fmt}"))
    talk.bound = True
    password = talk.gen.password(20)
    (project / ".env").write_text(f"DATABASE_PASSWORD={talk.gen.password(20)}\n")
    _history(talk)
    return project, gate, talk, password


def _withholds(v: Verdict | str, value: str) -> bool:
    return isinstance(v, str) or (v.body is not None and value.encode() not in v.body)


def _edit_result(talk: Talk, value: str) -> None:
    talk.events[3]["result"] = f"file1.py {value}"  # a walked string, early in the prefix


def _edit_unknown(talk: Talk, value: str) -> None:
    talk.events[5]["extra"] = {"x_note": f"seen {value}"}  # a field no walker knows


@pytest.mark.parametrize("fmt", list(PATHS))
@pytest.mark.parametrize("edit", [_edit_result, _edit_unknown])
def test_an_edit_inside_the_prefix_is_screened_again(
    gate_dirs: dict[str, Path], fmt: str, edit: Any
) -> None:
    project, gate = _gate(gate_dirs)
    talk = Talk(fmt, project, random.Random(f"edit{fmt}"))
    _history(talk)
    first = gate.both(talk.outbound())
    assert isinstance(first, Verdict) and first.body is None
    talk.say("next")
    taken = gate.convs.taken
    assert gate.both(talk.outbound()) == first
    assert gate.convs.taken > taken  # the prefix was taken whole, or the test proves nothing
    token = talk.gen.crc_token("ghp_")
    edit(talk, token)
    talk.say("one more")
    assert _withholds(gate.both(talk.outbound()), token)


@pytest.mark.parametrize("fmt", list(PATHS))
def test_a_changed_rule_file_or_denied_file_screens_the_prefix_again(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    project, gate, talk, password = _bound(gate_dirs, fmt, "ctx")
    talk.call("Bash", {"command": "cat config.txt"}, f"password is {password}")
    talk.say("fine")
    first = gate.both(talk.outbound())
    assert isinstance(first, Verdict) and first.body is None
    talk.say("next")
    taken = gate.convs.taken
    gate.both(talk.outbound())
    assert gate.convs.taken > taken
    (project / ".env").write_text(f"DATABASE_PASSWORD={password}\n")  # now a denied value
    talk.say("again")
    assert _withholds(gate.both(talk.outbound()), password)
    token = talk.gen.crc_token("ghp_")
    talk.call("Bash", {"command": "gh auth token"}, token)
    talk.say("thanks")
    assert _withholds(gate.both(talk.outbound()), token)  # asked: withheld
    (project / ".gate" / "rules.yaml").write_text("secrets:\n  high: block\n")
    talk.say("and")
    blocked = gate.both(talk.outbound())
    assert isinstance(blocked, str) and "secrets policy blocks it" in blocked


@pytest.mark.parametrize("fmt", list(PATHS))
def test_another_conversations_body_takes_nothing_from_this_one(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    """Keyed by the audit's session: another session's body starts from nothing, even with
    the very items this one read, and each conversation keeps its own last turn."""
    project, gate = _gate(gate_dirs)
    talk = Talk(fmt, project, random.Random(f"other{fmt}"))
    _history(talk)
    mine = replace(talk.outbound(), session="a")
    gate.both(mine)
    taken = gate.convs.taken
    theirs = replace(mine, session="b")
    gate.both(theirs)
    assert gate.convs.taken == taken and len(gate.convs) == 2
    talk.say("next")
    gate.both(replace(talk.outbound(), session="a"))
    assert gate.convs.taken > taken


def test_conversations_are_bounded(gate_dirs: dict[str, Path]) -> None:
    convs = Conversations(max_conversations=3)
    project, gate = _gate(gate_dirs, convs)
    talk = Talk("chat", project, random.Random(7))
    for n in range(5):
        gate.both(replace(talk.outbound(), session=str(n)))
    assert len(gate.convs) == 3


def test_conversations_are_bounded_by_their_bodies_bytes(gate_dirs: dict[str, Path]) -> None:
    """A conversation keeps its items' parse alive: what is held is bounded by the bodies'
    bytes, the oldest dropped first, and a body larger than the bound is not kept at all
    (each verdict still the one a screening that keeps nothing gives)."""
    convs = Conversations()
    project, gate = _gate(gate_dirs, convs)
    talk = Talk("chat", project, random.Random(8))
    _history(talk)
    size = len(talk.outbound().body)
    convs.max_bytes = size * 2 + size // 2
    for n in range(4):
        gate.both(replace(talk.outbound(), session=str(n)))
        assert convs.bytes <= convs.max_bytes
    assert len(convs) == 2 and convs.bytes == 2 * size
    convs.clear()
    convs.max_bytes = size - 1
    gate.both(replace(talk.outbound(), session="big"))
    assert len(convs) == 0 and convs.bytes == 0


def test_the_prefix_is_the_same_objects_not_equal_ones() -> None:
    a: list[Any] = [{"x": 1}, {"x": 2}, {"x": 3}]
    assert same_prefix(a, a[:2]) == 2 and same_prefix(a, [*a, {}]) == 3
    assert same_prefix(a, [a[0], copy.deepcopy(a[1]), a[2]]) == 1  # equal is not the same
    assert same_prefix(a, []) == 0


@pytest.mark.parametrize("fmt", list(PATHS))
@pytest.mark.parametrize("seed", range(3))
def test_random_edits_anywhere_in_a_long_session(
    gate_dirs: dict[str, Path], fmt: str, seed: int
) -> None:
    """Random turns: a secret put into a random earlier item (walked or not), items dropped
    or appended; each verdict is the one a screening that keeps nothing gives."""
    project, gate = _gate(gate_dirs)
    rand = random.Random(f"{fmt}{seed}")
    talk = Talk(fmt, project, rand)
    _history(talk)
    for _ in range(25):
        what = rand.choice(["say", "say", "edit", "unknown", "drop", "call"])
        token = talk.gen.crc_token("ghp_")
        calls = [e for e in talk.events if e["kind"] == "call"]
        if what == "say":
            talk.say(f"more {rand.random()}")
        elif what == "edit" and calls:
            rand.choice(calls)["result"] = f"out {token}"
        elif what == "unknown" and calls:
            rand.choice(calls)["extra"] = {"x_note": f"seen {token}"}
        elif what == "drop" and len(talk.events) > 3:
            talk.events.pop()
        else:
            talk.call("Bash", {"command": "env"}, f"ok {rand.random()}")
        gate.both(talk.outbound())
    assert gate.convs.taken > 100


def test_body_bytes_are_those_of_a_whole_screening(gate_dirs: dict[str, Path]) -> None:
    project, gate = _gate(gate_dirs)
    talk = Talk("responses", project, random.Random(9))
    _history(talk)
    token = talk.gen.crc_token("ghp_")
    talk.call("Bash", {"command": "gh auth token"}, token)
    for _ in range(3):
        talk.say("next")
        v = gate.both(talk.outbound())
        assert isinstance(v, Verdict) and v.body is not None
        assert token.encode() not in v.body and orjson.loads(v.body)


@pytest.mark.parametrize("fmt", list(PATHS))
def test_a_changed_denied_file_sweeps_the_prefix_unknown_fields_again(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    project, gate, talk, password = _bound(gate_dirs, fmt, "sweep")
    talk.events[5]["extra"] = {"x_note": f"it printed {password}"}
    talk.say("fine")
    gate.both(talk.outbound())
    talk.say("next")
    taken = gate.convs.taken
    first = gate.both(talk.outbound())
    assert isinstance(first, Verdict) and first.body is None and gate.convs.taken > taken
    (project / ".env").write_text(f"DATABASE_PASSWORD={password}\n")
    talk.say("again")
    assert _withholds(gate.both(talk.outbound()), password)


def _conv_with_units(kept: Any) -> tuple[Conversation, tuple[Any, ...]]:
    conv = Conversation()
    items = ({"a": 1}, {"b": 2}, {"c": 3})
    units: list[tuple[Any, ...]] = [(), (), ()]
    covered = frozenset({("messages", 0, "a"), ("messages", 2, "c")})
    conv.screened(kept, (), (), 0)
    conv.keep_units("messages", items, {1}, units, covered)
    return conv, items


def test_an_item_is_taken_only_for_the_same_screens_item_and_covered_paths() -> None:
    kept, other = object(), object()
    conv, items = _conv_with_units(kept)
    covered = frozenset({("messages", 0, "a"), ("messages", 2, "c")})
    assert conv.reusable(kept, "messages", items, covered) == 3  # type: ignore[arg-type]
    assert conv.reusable(other, "messages", items, covered) == 0  # type: ignore[arg-type]
    assert conv.reusable(kept, "input", items, covered) == 0  # type: ignore[arg-type]
    moved = (items[0], dict(items[1]), items[2])
    assert conv.reusable(kept, "messages", moved, covered) == 1  # type: ignore[arg-type]
    less = frozenset({("messages", 0, "a")})  # item 2's field no longer covered
    assert conv.reusable(kept, "messages", items, less) == 2  # type: ignore[arg-type]
    more = covered | {("messages", 1, "b")}
    assert conv.reusable(kept, "messages", items, more) == 1  # type: ignore[arg-type]
    # Item 1 was edited by the last screening, item 2 by this one: both swept again.
    assert conv.units_before(3, {2}) == ([(), (), ()], [1, 2])
    assert conv.units_before(2, {2}) == ([(), ()], [1])
