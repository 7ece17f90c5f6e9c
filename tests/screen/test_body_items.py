"""A body read item by item (gate/screen/body_items.py) is the body a whole parse reads, and
screening it gives the verdict and bytes of a screening that keeps nothing, in every wire
format, turn after turn, whatever was done to the bytes of items seen before: changed in
place, re-escaped, reordered, given a repeated key, the list's key given twice."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from gate.rules.layers import PolicyStore
from gate.screen.body_items import LISTS, MAX_BYTES, BodyItems
from gate.screen.codec import dump, parse
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import IndexStore
from gate.screen.item_cache import ItemCache
from gate.screen.request import Outbound, Screens, Verdict
from screen.test_item_cache import PATHS, Talk, _project, _step, _verdict

FORMATS = {"anthropic": "anthropic", "chat": "openai-chat", "responses": "openai-responses"}
FORMATS["gemini"] = "gemini"
KEY = {"anthropic": b'"messages":[', "chat": b'"messages":[', "responses": b'"input":['}
KEY["gemini"] = b'"contents":['


def _items(body: bytes, fmt: str) -> list[tuple[int, int]]:
    """Where each item of the body's list sits (as the whole parse reads it)."""
    text = body.decode("latin-1")
    found = re.search(KEY[fmt].decode()[:-2] + r"\s*:\s*\[", text)
    assert found is not None
    i = found.end()
    dec, spans = json.JSONDecoder(), list[tuple[int, int]]()
    while True:
        while text[i] in " \t\r\n,":
            i += 1
        if text[i] == "]":
            return spans
        end = dec.raw_decode(text, i)[1]
        spans.append((i, end))
        i = end


def _same_length(body: bytes, fmt: str, rand: random.Random) -> bytes:
    """One letter inside an earlier item changed for another: same length, other bytes."""
    spans = _items(body, fmt)[:-1]
    if not spans:
        return body
    a, b = rand.choice(spans)
    letters = [m.start() for m in re.finditer(rb"[a-z]", body[a:b])]
    if not letters:
        return body
    at = a + rand.choice(letters)
    return body[:at] + bytes([(body[at] - 0x61 + 1) % 26 + 0x61]) + body[at + 1 :]


def _escaped(body: bytes, fmt: str, rand: random.Random) -> bytes:
    """An earlier item written again with \\u escapes: its value, other bytes."""
    spans = _items(body, fmt)
    if not spans:
        return body
    a, b = rand.choice(spans)
    item = json.dumps(json.loads(body[a:b]), ensure_ascii=True)
    # Each "e" inside a key or a string as \u0065, which reads as "e" again.
    item = re.sub(r'"(?:[^"\\]|\\.)*"', lambda m: _e(m.group(0)), item)
    return body[:a] + item.encode() + body[b:]


def _e(string: str) -> str:
    return re.sub(r"(\\u[0-9a-f]{4}|\\.)|e", lambda m: m.group(1) or "\\u0065", string)


def _repeated(body: bytes, fmt: str, rand: random.Random) -> bytes:
    """An item (earlier, or the last) given a repeated key."""
    spans = _items(body, fmt)
    if not spans:
        return body
    a, b = rand.choice([spans[0], spans[-1]])
    item = body[a:b]
    key = re.search(rb'"([a-z_]+)":("[^"\\]*")', item)
    if key is None:
        return body
    return body[:a] + b"{" + key.group(0) + b"," + item[1:] + body[b:]


def _swapped(body: bytes, fmt: str, rand: random.Random) -> bytes:
    """Two earlier items swapped (calls then answer before they are made, say)."""
    spans = _items(body, fmt)
    if len(spans) < 3:
        return body
    (a, b), (c, d) = sorted(rand.sample(spans[:-1], 2))
    return body[:a] + body[c:d] + body[b:c] + body[a:b] + body[d:]


def _twice(body: bytes, fmt: str, rand: random.Random) -> bytes:
    """The list's key given twice at the top level: an old copy after the new one."""
    spans = _items(body, fmt)
    old = b"[" + b",".join(body[a:b] for a, b in spans[:1]) + b"]"
    return body[:-1] + b"," + KEY[fmt][:-1] + old + b"}"


def _spaced(body: bytes, fmt: str, rand: random.Random) -> bytes:
    """Whitespace between items, and one item re-indented."""
    spans = _items(body, fmt)
    if not spans:
        return body
    a, b = rand.choice(spans)
    item = json.dumps(json.loads(body[a:b]), indent=1, ensure_ascii=False).encode()
    return body[:a] + b"\n  " + item + b" \n" + body[b:]


def _cut(body: bytes, fmt: str, rand: random.Random) -> bytes:
    """Two earlier items taken out (a call and its result, say): every later one moves."""
    spans = _items(body, fmt)
    if len(spans) < 5:
        return body
    k = rand.randrange(1, len(spans) - 3)
    return body[: spans[k][0]] + body[spans[k + 2][0] :]


def _replaced(body: bytes, fmt: str, rand: random.Random) -> bytes:
    """Two earlier items (a call and its result, say) replaced by copies of the first:
    every later item stays where it was, after one call fewer."""
    spans = _items(body, fmt)
    if len(spans) < 5:
        return body
    k = rand.randrange(1, len(spans) - 3)
    first = body[slice(*spans[0])]
    return body[: spans[k][0]] + first + b"," + first + body[spans[k + 1][1] :]


def _no_ids(body: bytes, fmt: str, rand: random.Random) -> bytes:
    """Calls and responses without ids (as the genai SDK sends them): Gemini pairs them by
    name and order, so an earlier content's keys depend on the contents before it."""
    return re.sub(rb'"id":\s*"call_[0-9a-f_]+",\s*', b"", body)


ATTACKS: dict[str, Callable[[bytes, str, random.Random], bytes]] = {
    "same_length": _same_length,
    "escaped": _escaped,
    "repeated": _repeated,
    "swapped": _swapped,
    "twice": _twice,
    "spaced": _spaced,
    "no_ids": _no_ids,
    "cut": _cut,
    "replaced": _replaced,
}


@pytest.mark.parametrize("fmt", list(PATHS))
@pytest.mark.parametrize("seed", range(4))
def test_each_turn_and_its_attacks_get_the_verdict_of_a_screening_that_keeps_nothing(
    gate_dirs: dict[str, Path], fmt: str, seed: int
) -> None:
    rand = random.Random(f"bodies{fmt}{seed}")
    project, data, env = _project(gate_dirs, rand)
    index, secrets = IndexStore(projects=(str(project),)), SecretScreen.load(data)
    bodies = BodyItems()
    kept = Screens(index, secrets, items=ItemCache(), bodies=bodies)
    talk, policies = Talk(fmt, project, rand), PolicyStore()
    last: Verdict | None = None
    kinds: list[str] = []
    items = 0
    for _ in range(30):
        kind = _step(talk, env)
        if kind == "approve" and last is not None:
            talk.approved = frozenset(w.asked.key for w in last.withheld if w.asked)
        req = talk.outbound()
        if fmt == "gemini" and seed % 2:  # the whole session without ids
            req = Outbound(
                path=req.path,
                body=_no_ids(req.body, fmt, rand),
                agent=None,
                project_root=req.root,
                approved=req.approved,
            )
        attack = rand.choice([None, None, *ATTACKS])
        raw = ATTACKS[attack](req.body, fmt, rand) if attack else req.body
        for body in (raw, req.body) if attack else (raw,):  # the attack, then the turn
            sent = Outbound(
                path=req.path, body=body, agent=None, project_root=req.root, approved=req.approved
            )
            got = _verdict(sent, policies, kept)
            nothing = Screens(index, secrets, items=None, walks=None, bodies=None)
            want = _verdict(sent, PolicyStore(), nothing)
            assert got == want, f"turn {len(kinds)} ({kind}, {attack}) after {kinds}"
        items += len(_items(req.body, fmt))
        kinds.append(f"{kind}/{attack}")
        last = got if isinstance(got, Verdict) else last
    # Items were read once each (not parsed anew each turn), most of them found by one
    # compare of a body read before's bytes, or the test proves nothing.
    assert bodies.parsed < items / 3, (bodies.parsed, items)
    assert bodies.taken > items / 3, (bodies.taken, items)


@pytest.mark.parametrize("fmt", list(PATHS))
@pytest.mark.parametrize("seed", range(3))
def test_a_body_read_item_by_item_is_the_whole_parse(
    gate_dirs: dict[str, Path], fmt: str, seed: int
) -> None:
    rand = random.Random(f"read{fmt}{seed}")
    project, _, env = _project(gate_dirs, rand)
    # The last seed with a small cap: what is kept is forgotten every few bodies.
    talk, bodies = Talk(fmt, project, rand), BodyItems(20_000 if seed == 2 else MAX_BYTES)
    for _ in range(25):
        _step(talk, env)
        body = talk.body()
        for attack in ATTACKS.values():
            raw = attack(body, fmt, rand)
            read = bodies.read(raw, FORMATS[fmt])
            try:
                whole = parse(raw)
            except ValueError:  # Ambiguous, or not JSON (a letter after a backslash changed)
                assert read is None  # refused when parsed whole, with the whole one's words
                continue
            if read is not None:
                assert read.value == whole
                assert orjson.dumps(read.value) == orjson.dumps(whole)  # key order too
                assert read.dump() == dump(whole)


@pytest.mark.parametrize("fmt", list(PATHS))
def test_editing_a_read_body_edits_no_other(gate_dirs: dict[str, Path], fmt: str) -> None:
    """Screening edits its own copy: the next body sharing the item reads it unedited."""
    project, _, _ = _project(gate_dirs, random.Random(5))
    talk = Talk(fmt, project, random.Random(5))
    talk.call("Bash", {"command": "ls"}, "a.py\nb.py")
    talk.say("thanks")
    body, bodies = talk.body(), BodyItems()
    first = bodies.read(body, FORMATS[fmt])
    assert first is not None
    path = _a_string(first.value, LISTS[FORMATS[fmt]][0])
    first.own(path)
    _set(first.value, path, "EDITED")
    first.own(("model",))  # the frame too
    first.value["model"] = "edited-model"
    assert first.dump() == dump(first.value)
    second = bodies.read(body, FORMATS[fmt])
    assert second is not None and second.value == parse(body)
    assert second.dump() == dump(parse(body))


def _a_string(node: object, at: tuple[str, ...]) -> tuple[str | int, ...]:
    """The path of the first string inside the list's second item."""
    path: list[str | int] = [*at, 1]
    value = node
    for k in path:
        value = value[k]  # type: ignore[index]
    while not isinstance(value, str):
        k = next(iter(value)) if isinstance(value, dict) else 0
        path.append(k)
        value = value[k]  # type: ignore[index]
    return tuple(path)


def _set(node: object, path: tuple[str | int, ...], text: str) -> None:
    for k in path[:-1]:
        node = node[k]  # type: ignore[index]
    node[path[-1]] = text  # type: ignore[index]


@pytest.mark.parametrize("fmt", list(PATHS))
def test_an_old_item_changed_in_place_is_screened_again(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    """An item's bytes changed without changing its length (a token where padding was) is
    a new item: its secret is found and withheld."""
    project, data, _ = _project(gate_dirs, random.Random(6))
    screens = Screens(IndexStore(projects=(str(project),)), SecretScreen.load(data))
    talk = Talk(fmt, project, random.Random(6))
    token = talk.gen.crc_token("ghp_")
    pad = "x" * len(token)
    talk.call("Bash", {"command": "cat out.txt"}, f"output: {pad}")
    talk.say("and now")
    clean = talk.outbound()
    first = _verdict(clean, PolicyStore(), screens)
    assert isinstance(first, Verdict) and first.body is None
    body = clean.body.replace(pad.encode(), token.encode())
    assert len(body) == len(clean.body)
    again = _verdict(
        Outbound(path=clean.path, body=body, agent=None, project_root=None), PolicyStore(), screens
    )
    assert isinstance(again, Verdict) and again.body is not None
    assert token.encode() not in again.body and [w.kind for w in again.withheld] == ["secret"]


@pytest.mark.parametrize("fmt", list(PATHS))
def test_a_repeated_key_in_an_item_seen_before_is_refused(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    """An item that was read (and kept) once, sent again with a key repeated inside it, is
    refused as the whole parse refuses it; so is the list's key twice at the top."""
    project, data, _ = _project(gate_dirs, random.Random(7))
    screens = Screens(IndexStore(projects=(str(project),)), SecretScreen.load(data))
    talk = Talk(fmt, project, random.Random(7))
    talk.call("Bash", {"command": "ls"}, "a.py")
    req = talk.outbound()
    assert isinstance(_verdict(req, PolicyStore(), screens), Verdict)
    (a, b) = _items(req.body, fmt)[-1]
    item = req.body[a:b]
    inner = re.search(rb'"[a-z_]+":"[^"\\]*"', item[1:])
    assert inner is not None
    repeated = req.body[:a] + b"{" + inner.group(0) + b"," + item[1:] + req.body[b:]
    for body in (repeated, _twice(req.body, fmt, random.Random(0))):
        got = _verdict(
            Outbound(path=req.path, body=body, agent=None, project_root=None),
            PolicyStore(),
            screens,
        )
        assert isinstance(got, str) and "appears more than once" in got, got


@pytest.mark.parametrize("fmt", list(PATHS))
def test_conversations_side_by_side_are_each_read_and_walked_only_where_they_are_new(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    """Twenty agents on one gate, their turns interleaved and nothing naming their sessions
    (no session headers, no run): each body's unchanged items are recognised by their bytes
    and their walks remembered, so only what is new is scanned and walked (before, an
    index kept its last 8 items, any conversation's, and the walk memo one item per index:
    every item was read and walked again), and each verdict is still that of a screening
    that keeps nothing."""
    project, data, _ = _project(gate_dirs, random.Random(8))
    index, secrets = IndexStore(projects=(str(project),)), SecretScreen.load(data)
    screens = Screens(index, secrets)
    nothing = Screens(index, secrets, items=None, walks=None, bodies=None)
    assert screens.bodies is not None and screens.walks is not None
    talks = [Talk(fmt, project, random.Random(f"side{k}")) for k in range(20)]
    for turn in range(6):
        for k, talk in enumerate(talks):
            before = len(_items(talk.body(), fmt))
            talk.call("Bash", {"command": f"ls src/{k}/{turn}"}, f"main.py\nutil_{k}_{turn}.py")
            talk.say(f"and now step {turn} of agent {k}")
            raw = talk.body()
            new = len(_items(raw, fmt)) - before
            req = Outbound(path=PATHS[fmt], body=raw, agent=None, project_root=None)
            scanned, walked = screens.bodies.scanned, screens.walks.walked
            got = _verdict(req, PolicyStore(), screens)
            assert got == _verdict(req, PolicyStore(), nothing), (turn, k)
            if turn:  # each conversation's first body is all new
                assert screens.bodies.scanned - scanned <= new, (turn, k)
                # a walk per new item and key it is remembered under (a message, its calls,
                # its strings no walker knows)
                assert screens.walks.walked - walked <= 3 * new, (turn, k)
