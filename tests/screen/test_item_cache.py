"""Screening with the strings' outcomes kept between requests (gate/screen/item_cache.py)
gives the verdict and the bytes a screening that keeps nothing gives, in every wire format,
turn after turn of a random session; and an outcome is never reused once anything it
depended on changed (a rule file, a denied file on disk, the project root, the answers)."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from gate import providers
from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import IndexStore
from gate.screen.item_cache import ItemCache
from gate.screen.request import Blocked, Outbound, Screens, Verdict, screen, screen_object
from messages import system
from screen.secrets_corpus import Gen
from screen.session_steps import common_call

PATHS = {
    "anthropic": "/v1/messages?beta=true",
    "chat": "/v1/chat/completions",
    "responses": "/v1/responses",
    "gemini": "/v1beta/models/gemini-2.5-pro:generateContent",
}


class Talk:
    """A coding agent's session, as events any of the four wire formats can carry."""

    def __init__(self, fmt: str, project: Path, rand: random.Random):
        self.fmt, self.project, self.rand, self.n = fmt, project, rand, 0
        self.gen = Gen(rand.randrange(1 << 30))
        self.events: list[dict[str, Any]] = [{"kind": "user", "text": "help me with this"}]
        self.compact = True
        self.approved: frozenset[str] = frozenset()
        self.bound = False  # whether the request comes from a run bound to the project

    def call(self, name: str, inp: dict[str, Any], result: Any, **extra: Any) -> None:
        self.n += 1
        call_id = f"call_{self.n:04d}_{self.rand.getrandbits(32):08x}"
        self.events.append(
            {"kind": "call", "id": call_id, "name": name, "input": inp, "result": result, **extra}
        )

    def say(self, text: str) -> None:
        self.events.append({"kind": "user", "text": text})

    def body(self) -> bytes:
        req = getattr(self, f"_{self.fmt}")(copy.deepcopy(self.events))
        return orjson.dumps(req) if self.compact else json.dumps(req).encode()

    def outbound(self) -> Outbound:
        root = str(self.project) if self.bound else None
        return Outbound(
            path=PATHS[self.fmt],
            body=self.body(),
            agent=None,
            project_root=root,
            approved=self.approved,
        )

    def _anthropic(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        msgs: list[dict[str, Any]] = []
        for e in events:
            if e["kind"] == "user":
                msgs.append({"role": "user", "content": [{"type": "text", "text": e["text"]}]})
                continue
            use = {"type": "tool_use", "id": e["id"], "name": e["name"], "input": e["input"]}
            msgs.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}, use]})
            if e["result"] is not None:
                block = {"type": "tool_result", "tool_use_id": e["id"], "content": e["result"]}
                msgs.append({"role": "user", "content": [{**block, **e.get("extra", {})}]})
        return {"model": "claude-test", "system": system(str(self.project)), "messages": msgs}

    def _chat(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        msgs: list[dict[str, Any]] = [{"role": "system", "content": self._prompt()}]
        for e in events:
            if e["kind"] == "user":
                msgs.append({"role": "user", "content": e["text"]})
                continue
            fn = {"name": e["name"], "arguments": json.dumps(e["input"])}
            msgs.append(
                {
                    "role": "assistant",
                    "content": "ok",
                    "tool_calls": [{"id": e["id"], "type": "function", "function": fn}],
                }
            )
            if e["result"] is not None:
                msgs.append(
                    {
                        "role": "tool",
                        "tool_call_id": e["id"],
                        "content": e["result"],
                        **e.get("extra", {}),
                    }
                )
        return {"model": "gpt-test", "messages": msgs}

    def _responses(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        items: list[dict[str, Any]] = []
        for e in events:
            if e["kind"] == "user":
                text = {"type": "input_text", "text": e["text"]}
                items.append({"type": "message", "role": "user", "content": [text]})
                continue
            items.append(
                {
                    "type": "function_call",
                    "call_id": e["id"],
                    "name": e["name"],
                    "arguments": json.dumps(e["input"]),
                }
            )
            if e["result"] is not None:
                items.append(
                    {
                        "type": "function_call_output",
                        "call_id": e["id"],
                        "output": e["result"],
                        **e.get("extra", {}),
                    }
                )
        return {"model": "gpt-test", "instructions": self._prompt(), "input": items}

    def _gemini(self, events: list[dict[str, Any]]) -> dict[str, Any]:
        contents: list[dict[str, Any]] = []
        for e in events:
            if e["kind"] == "user":
                contents.append({"role": "user", "parts": [{"text": e["text"]}]})
                continue
            fc = {"id": e["id"], "name": e["name"], "args": e["input"]}
            contents.append({"role": "model", "parts": [{"text": "ok"}, {"functionCall": fc}]})
            if e["result"] is not None:
                fr = {"id": e["id"], "name": e["name"], "response": {"output": e["result"]}}
                part = {"functionResponse": {**fr, **e.get("extra", {})}}
                contents.append({"role": "user", "parts": [part]})
        return {"systemInstruction": {"parts": [{"text": self._prompt()}]}, "contents": contents}

    def _prompt(self) -> str:
        return str(system(str(self.project))[1]["text"])


def _step(t: Talk, env: Path) -> str:
    """One change an agent (or its user, or the project) makes between two requests."""
    p = t.project
    kind = t.rand.choice(
        [
            "read",
            "read",
            "bash",
            "env",
            "cat_env",
            "secret",
            "notes",
            "open",
            "compact",
            "drop",
            "text_secret",
            "unknown",
            "rules",
            "env_changed",
            "bound",
            "approve",
            "format",
            "resend",
        ]
    )
    value = env.read_text().strip()
    if common_call(t, kind, str(p), value):
        pass
    elif kind == "bash":
        t.call("Bash", {"command": "git status"}, " M a.py\n" * t.rand.randrange(1, 4))
    elif kind == "compact" and len(t.events) > 3:  # an old tool output cleared
        e = t.rand.choice(t.events[1:])
        if e["kind"] == "call" and e["result"] is not None:
            e["result"] = "[Old tool result content cleared]"
    elif kind == "drop" and len(t.events) > 2:
        t.events.pop()
    elif kind == "text_secret":
        t.say(f"use token {t.gen.crc_token('ghp_')}")
    elif kind == "unknown":  # a field no walker knows
        t.call("Bash", {"command": "env"}, "ok", extra={"x_note": {"seen": [value]}})
    elif kind == "rules":
        rules = p / ".gate" / "rules.yaml"
        rules.write_text(rules.read_text() + f"  - Read(./gen{t.n}.txt)\n")
    elif kind == "env_changed":  # the denied file rewritten: other values to withhold
        env.write_text("DATABASE_PASSWORD=" + t.gen.password(20) + "\n")
    elif kind == "bound":
        t.bound = not t.bound
    elif kind == "format":
        t.compact = not t.compact
    if t.events[-1]["kind"] == "call" and t.events[-1]["result"] is None and kind != "open":
        t.events[-1]["result"] = f"done {t.n}"  # the open call answered
    return kind


def _verdict(req: Outbound, policies: PolicyStore, screens: Screens) -> Verdict | str:
    try:
        return screen(req, policies, screens)
    except Blocked as exc:
        return f"blocked: {exc}"


def _project(gate_dirs: dict[str, Path], rand: random.Random) -> tuple[Path, Path, Path]:
    project, data = gate_dirs["project"], gate_dirs["data"]
    data.mkdir(mode=0o700)
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("ask:\n  - Read(./notes.txt)\n")
    env = project / ".env"
    env.write_text("DATABASE_PASSWORD=" + Gen(rand.randrange(1 << 30)).password(20) + "\n")
    return project, data, env


@pytest.mark.parametrize("fmt", list(PATHS))
@pytest.mark.parametrize("seed", range(6))
def test_each_turn_gets_the_verdict_of_a_screening_that_keeps_nothing(
    gate_dirs: dict[str, Path], fmt: str, seed: int
) -> None:
    rand = random.Random(f"{fmt}{seed}")
    project, data, env = _project(gate_dirs, rand)
    index, secrets = IndexStore(projects=(str(project),)), SecretScreen.load(data)
    items = ItemCache()
    kept = Screens(index, secrets, items=items)
    talk, policies = Talk(fmt, project, rand), PolicyStore()
    last: Verdict | None = None
    kinds = []
    for _ in range(40):
        kind = _step(talk, env)
        if kind == "approve" and last is not None:  # a person approved what was asked
            talk.approved = frozenset(w.asked.key for w in last.withheld if w.asked)
        req = talk.outbound()
        got = _verdict(req, policies, kept)
        nothing = Screens(index, secrets, items=None, walks=None, bodies=None)
        want = _verdict(req, PolicyStore(), nothing)
        assert got == want, f"turn {len(kinds)} ({kind}) after {kinds}"
        kinds.append(kind)
        last = got if isinstance(got, Verdict) else last
    # The outcomes were reused (not worked out anew each turn), or the test proves nothing.
    assert items.reused > 10 * len(kinds), (items.reused, kinds)


# -- a changed context never reuses an outcome -------------------------------------------


def _setup(gate_dirs: dict[str, Path]) -> tuple[Path, Screens, PolicyStore]:
    project, data = gate_dirs["project"], gate_dirs["data"]
    data.mkdir(mode=0o700)
    (project / ".gate").mkdir()
    screens = Screens(IndexStore(projects=(str(project),)), SecretScreen.load(data))
    return project, screens, PolicyStore()


@pytest.mark.parametrize("fmt", list(PATHS))
def test_a_rule_edit_is_not_answered_from_the_cache(gate_dirs: dict[str, Path], fmt: str) -> None:
    project, screens, policies = _setup(gate_dirs)
    talk = Talk(fmt, project, random.Random(1))
    token = talk.gen.crc_token("ghp_")
    talk.call("Bash", {"command": "gh auth token"}, token)
    first = screen(talk.outbound(), policies, screens)
    assert first.body is not None and token.encode() not in first.body  # asked: withheld
    (project / ".gate" / "rules.yaml").write_text("secrets:\n  high: block\n")
    with pytest.raises(Blocked, match="secrets policy blocks it"):
        screen(talk.outbound(), policies, screens)


@pytest.mark.parametrize("fmt", list(PATHS))
def test_a_denied_file_changed_on_disk_is_not_answered_from_the_cache(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    project, screens, policies = _setup(gate_dirs)
    talk = Talk(fmt, project, random.Random(2))
    talk.bound = True
    old, new = talk.gen.password(20), talk.gen.password(20)
    (project / ".env").write_text(f"DATABASE_PASSWORD={old}\n")
    talk.call("Bash", {"command": "cat config.txt"}, f"password is {new}")
    first = screen(talk.outbound(), policies, screens)
    assert first.body is None  # nothing to withhold yet
    (project / ".env").write_text(f"DATABASE_PASSWORD={new}\n")
    second = screen(talk.outbound(), policies, screens)
    assert second.body is not None and new.encode() not in second.body
    assert [w.kind for w in second.withheld] == ["content"]


@pytest.mark.parametrize("fmt", list(PATHS))
def test_another_project_root_is_not_answered_from_the_cache(
    gate_dirs: dict[str, Path], tmp_path: Path, fmt: str
) -> None:
    project, screens, policies = _setup(gate_dirs)
    other = tmp_path / "other"
    other.mkdir()
    talk = Talk(fmt, project, random.Random(3))
    value = talk.gen.password(20)
    (other / ".env").write_text(f"API_PASSWORD={value}\n")
    talk.call("Bash", {"command": "cat settings"}, f"the value {value} it printed")
    body = talk.body()
    here = screen(
        Outbound(path=PATHS[fmt], body=body, agent=None, project_root=str(project)),
        policies,
        screens,
    )
    assert here.body is None  # the project's own denied files hold no such value
    there = screen(
        Outbound(path=PATHS[fmt], body=body, agent=None, project_root=str(other)), policies, screens
    )
    assert there.body is not None and value.encode() not in there.body


@pytest.mark.parametrize("fmt", list(PATHS))
def test_an_answer_of_another_run_is_not_answered_from_the_cache(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    project, screens, policies = _setup(gate_dirs)
    talk = Talk(fmt, project, random.Random(4))
    token = talk.gen.crc_token("ghp_")
    talk.call("Bash", {"command": "gh auth token"}, token)
    asked = screen(talk.outbound(), policies, screens)
    assert asked.body is not None and token.encode() not in asked.body
    talk.approved = frozenset(w.asked.key for w in asked.withheld if w.asked)
    approved = screen(talk.outbound(), policies, screens)
    assert approved.body is None  # sent as is: a person said yes in this run
    talk.approved = frozenset()  # another run, nobody said yes
    again = screen(talk.outbound(), policies, screens)
    assert again.body is not None and token.encode() not in again.body


def test_two_gates_share_nothing(gate_dirs: dict[str, Path]) -> None:
    """Each Screens holds its own caches: one gate's outcomes are never another's."""
    _, screens, _ = _setup(gate_dirs)
    other = Screens(screens.indexes, screens.secrets)
    for name in ("items", "walks", "bodies", "conversations"):
        assert getattr(screens, name) is not None
        assert getattr(screens, name) is not getattr(other, name), name


# -- an item resent unchanged is found by identity, never a changed one ----------------


def test_an_item_found_by_identity_is_swept_for_what_the_walk_covers_now(
    gate_dirs: dict[str, Path],
) -> None:
    """The same strings object (an unchanged item, from the walk memo) is reused only while
    the walk covers the same of its strings: one it covered before and covers no longer (a
    walker that stopped knowing a field) is screened as an unknown string."""
    _, screens, policies = _setup(gate_dirs)
    assert screens.items is not None and screens.secrets is not None
    token = Gen(5).crc_token("ghp_")
    at = ("messages", 1, "x_note")
    strings = (((at, f"token {token}"),), ())
    kept = screens.items.under(policies.policy_for(None), None, screens.secrets, frozenset())
    assert kept.unknown(("messages", 1), strings, {at}) == ()  # the walk screens it
    found = kept.unknown(("messages", 1), strings, set())
    assert [o.seg.path for o in found] == [at] and token not in found[0].text
    assert kept.unknown(("messages", 1), strings, {at}) == ()
    assert kept.unknown(("messages", 1), strings, {("messages", 0)}) == found


@pytest.mark.parametrize("fmt", list(PATHS))
def test_an_item_edited_in_place_is_screened_again(gate_dirs: dict[str, Path], fmt: str) -> None:
    """A parsed body its caller keeps and edits in place between requests (a WebSocket
    payload, say): an edited item's strings are new, never an earlier outcome reused, in
    walked fields and unknown ones; each screening is the one a screening keeping nothing
    gives."""
    project, screens, policies = _setup(gate_dirs)
    talk = Talk(fmt, project, random.Random(6))
    talk.call("Bash", {"command": "git status"}, "clean", extra={"x_note": {"seen": ["fine"]}})
    talk.say("thanks")
    body = orjson.loads(talk.body())
    token, other = talk.gen.crc_token("ghp_"), talk.gen.crc_token("ghp_")
    fmt_mod = providers.detect(PATHS[fmt])
    assert fmt_mod is not None
    nothing = Screens(screens.indexes, screens.secrets, items=None, walks=None, bodies=None)
    req = Outbound(path=PATHS[fmt], body=b"{}", agent=None, project_root=None)
    for edit in (None, "clean", "fine", "thanks", "clean"):
        if edit is not None:  # the string in place, in the very objects screened before
            _replace(body, edit, f"{edit} {token}")
            token, other = other, token
        want = screen_object(fmt_mod, req, copy.deepcopy(body), PolicyStore(), None, nothing)
        got = screen_object(fmt_mod, req, body, policies, None, screens)
        assert got == want and (edit is None) == (got.body is None), edit


def _replace(node: Any, old: str, new: str) -> None:
    """Every string starting with `old` in `node` set to `new`, in place."""
    items = node.items() if isinstance(node, dict) else enumerate(node)
    for k, v in list(items):
        if isinstance(v, str) and v.startswith(old):
            node[k] = new
        elif isinstance(v, dict | list):
            _replace(v, old, new)
