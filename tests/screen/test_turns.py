"""A Claude Code conversation's next turn, screened by a gate that keeps what it made of
the last one (items read, walks, decisions, outcomes): its verdict is the one a screening
that keeps nothing gives, byte for byte, turn after turn, whatever the agent did in between
(new calls, edits of old messages, moved cache marks, retries, rule and file changes,
bodies that must be blocked, key order and spacing, conversations side by side)."""

from __future__ import annotations

import copy
import json
import os
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import IndexStore
from gate.screen.prefix import Conversations
from gate.screen.request import Blocked, Outbound, Screens, Verdict, screen
from messages import system
from screen.secrets_corpus import Gen
from screen.session_steps import common_call

PATH = "/v1/messages?beta=true"


class Session:
    """A Claude Code style conversation that an agent grows, edits and resends."""

    def __init__(self, project: Path, rand: random.Random):
        self.project, self.rand, self.n = project, rand, 0
        self.gen = Gen(rand.randrange(1 << 30))
        self.messages: list[dict[str, Any]] = [
            {"role": "user", "content": [{"type": "text", "text": "help me with this"}]}
        ]
        self.system = system(str(project))
        if rand.random() < 0.5:  # the working directory stated by a user message instead
            self.system[1] = {**self.system[1], "text": "You are Claude Code."}
        self.compact = True
        self.messages_last = rand.random() < 0.5  # as the Python SDK orders keyword args
        self.user_id = "user_session_abc"
        self.approved: frozenset[str] = frozenset()

    def call(
        self, name: str, inp: dict[str, Any], result: Any | None, call_id: str | None = None
    ) -> None:
        self.n += 1
        call_id = call_id or f"toolu_{self.n:04d}_{self.rand.getrandbits(32):08x}"
        self.messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"step {self.n}"},
                    {"type": "tool_use", "id": call_id, "name": name, "input": inp},
                ],
            }
        )
        if result is not None:
            self.messages.append(
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result}],
                }
            )

    def answer_open(self) -> bool:
        """A user message answering the last call, if it is still open."""
        last = self.messages[-1]
        if last["role"] != "assistant" or last["content"][-1]["type"] != "tool_use":
            return False
        self.messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": last["content"][-1]["id"],
                        "content": f"done {self.gen.password()}",
                    }
                ],
            }
        )
        return True

    def body(self) -> bytes:
        msgs = copy.deepcopy(self.messages)
        for m in reversed(msgs):  # Claude Code marks the last user block for caching
            if m["role"] == "user" and isinstance(m["content"], list):
                m["content"][-1]["cache_control"] = {"type": "ephemeral"}
                break
        req = {
            "model": "claude-test",
            "messages": msgs,
            "system": self.system,
            "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
            "metadata": {"user_id": self.user_id},
            "max_tokens": 64,
            "stream": True,
        }
        if self.messages_last:
            req = {**{k: v for k, v in req.items() if k != "messages"}, "messages": msgs}
        if self.compact:
            return orjson.dumps(req)
        return json.dumps(req).encode()  # Python SDK style: spaces, \u escapes


def _steps(s: Session, env_value: str) -> Iterator[str]:
    """One change per turn, chosen at random; yields its name."""
    p = s.project
    kinds = [
        "read",
        "read",
        "bash",
        "bash",
        "env",
        "cat_env",
        "secret",
        "notes",
        "open",
        "compact",
        "retry",
        "drop",
        "text_secret",
        "system",
        "format",
        "symlink",
        "approve",
        "dup_id",
        "orphan",
        "thinking",
        "rules",
        "cwd",
        "unknown",
        "metadata",
        "dup_result",
        "edit",
        "edit",
    ]
    for _ in range(60):
        kind = s.rand.choice(kinds)
        if s.answer_open() and kind == "open":
            kind = "read"
        if common_call(s, kind, str(p), env_value):
            pass
        elif kind == "bash":
            s.call("Bash", {"command": "git status"}, [{"type": "text", "text": " M a.py"}])
        elif kind == "compact" and len(s.messages) > 4:  # an old tool output cleared
            i = s.rand.randrange(1, len(s.messages) - 1)
            for block in s.messages[i]["content"]:
                if block.get("type") == "tool_result":
                    block["content"] = "[Old tool result content cleared]"
        elif kind == "drop" and len(s.messages) > 3:
            del s.messages[-2:]
            s.answer_open()
        elif kind == "text_secret":
            s.messages.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": f"use token {s.gen.crc_token('ghp_')}"}],
                }
            )
            s.messages.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
        elif kind == "system":  # a secret in the system prompt: found before the messages'
            s.system = [
                *s.system[:1],
                {**s.system[1], "text": s.system[1]["text"] + f" token {s.gen.crc_token('ghp_')}"},
            ]
        elif kind == "unknown":  # a field no walker knows, in a known block
            s.call("Bash", {"command": "env"}, "ok")
            s.messages[-1]["content"][0]["x_note"] = {"seen": [s.gen.crc_token("ghp_")]}
        elif kind == "metadata":  # a secret in a field outside the messages
            s.user_id = s.gen.crc_token("ghp_")
        elif kind == "cwd":
            s.messages.append(
                {"role": "user", "content": [{"type": "text", "text": f"Working directory: {p}"}]}
            )
            s.messages.append({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
        elif kind == "format":
            s.compact = not s.compact
        elif kind == "symlink":  # an allowed file read earlier now names the .env
            target = p / "src" / f"mod{s.rand.randint(0, s.n)}.py"
            if not target.exists():
                target.parent.mkdir(exist_ok=True)
                os.symlink(p / ".env", target)
        elif kind == "edit":  # a file read earlier rewritten by renaming over it
            target = p / "src" / f"mod{s.rand.randint(0, s.n)}.py"
            if not target.is_symlink():
                target.parent.mkdir(exist_ok=True)
                (p / "src" / "tmp").write_text(f"# edit {s.n}\n")
                os.replace(p / "src" / "tmp", target)
        elif kind == "rules":
            rules = p / ".gate" / "rules.yaml"
            rules.write_text(rules.read_text() + f"  - Read(./gen{s.n}.txt)\n")
        yield kind


def _verdict(req: Outbound, screens: Screens, policies: PolicyStore) -> Verdict | str:
    try:
        return screen(req, policies, screens)
    except Blocked as exc:
        return f"blocked: {exc}"


def _nothing(screens: Screens) -> Screens:
    """Screens that keep nothing between requests: every body screened whole."""
    return Screens(screens.indexes, screens.secrets, items=None, walks=None, bodies=None)


def _convs(screens: Screens) -> Conversations:
    assert screens.conversations is not None
    return screens.conversations


BLOCKING = ("dup_id", "orphan", "thinking", "dup_result")


@pytest.mark.parametrize("seed", range(12))
def test_each_turn_gets_the_whole_body_verdict(gate_dirs: dict[str, Path], seed: int) -> None:
    project, data = gate_dirs["project"], gate_dirs["data"]
    data.mkdir(mode=0o700)
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("ask:\n  - Read(./notes.txt)\n")
    rand = random.Random(seed)
    env_value = "DATABASE_PASSWORD=" + Gen(rand.randrange(1 << 30)).password(20)
    (project / ".env").write_text(env_value + "\n")
    screens = Screens(IndexStore(projects=(str(project),)), SecretScreen.load(data))
    session, policies = Session(project, rand), PolicyStore()
    kinds: list[str] = []
    last: Verdict | None = None
    for kind in _steps(session, env_value):
        if kind == "approve" and last is not None:  # a person approved what was asked
            session.approved = frozenset(w.asked.key for w in last.withheld if w.asked)
        added = _blocking(session, kind, env_value) if kind in BLOCKING else 0
        req = Outbound(
            path=PATH,
            body=session.body(),
            agent="claude-code",
            project_root=None,
            approved=session.approved,
        )
        got = _verdict(req, screens, policies)
        want = _verdict(req, _nothing(screens), PolicyStore())
        assert got == want, f"turn {len(kinds)} ({kind})"
        if added:  # (a denied value is known once gate knows the project's directory)
            assert kind == "thinking" or (isinstance(got, str) and got.startswith("blocked"))
            del session.messages[-added:]
        kinds.append(kind)
        last = got if isinstance(got, Verdict) else last
    # Most turns took up their last turn's walks; the rest (format, system...) walked anew.
    convs = _convs(screens)
    assert convs.walked >= 10 * len(kinds) and convs.taken >= 20 * len(kinds), kinds
    assert convs.decided >= 4 * len(kinds), kinds


def _blocking(s: Session, kind: str, env_value: str) -> int:
    """Messages the whole-body screening refuses; how many were added."""
    if kind == "dup_id":
        old = (
            next(
                b["id"]
                for m in s.messages
                for b in m["content"]
                if isinstance(b, dict) and b.get("type") == "tool_use"
            )
            if any(
                m["role"] == "assistant" and any(b.get("type") == "tool_use" for b in m["content"])
                for m in s.messages
            )
            else None
        )
        if old is None:
            s.call("Read", {"file_path": "a"}, "x", call_id="toolu_dup")
            s.call("Read", {"file_path": "b"}, "y", call_id="toolu_dup")
            return 4
        s.call("Read", {"file_path": "a"}, "x", call_id=old)
        return 2
    if kind == "dup_result" and (
        answered := [
            b["tool_use_id"]
            for m in s.messages
            for b in m["content"]
            if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
    ):
        s.messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": answered[-1], "content": "again"}
                ],
            }
        )
        return 1
    if kind in ("orphan", "dup_result"):
        s.messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "toolu_nobody", "content": "?"}],
            }
        )
        return 1
    s.messages.append(
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": f"the password is {env_value}",
                    "signature": "c2ln",
                },
                {"type": "text", "text": "hm"},
            ],
        }
    )
    return 1


def test_a_file_edited_between_turns_is_decided_as_it_is_now(gate_dirs: dict[str, Path]) -> None:
    """Agents edit files they read: a read of a file that is another inode now is decided
    again (and holds, the walk still taken up), and a file that now names the .env has its
    earlier read withheld, as screening the whole body does."""
    project, data = gate_dirs["project"], gate_dirs["data"]
    data.mkdir(mode=0o700)
    env_value = "API_TOKEN=" + Gen(9).password(24)
    (project / ".env").write_text(env_value + "\n")
    (project / "a.py").write_text("print(1)\n")
    s = Session(project, random.Random(2))
    s.call("Read", {"file_path": f"{project}/a.py"}, "1\tprint(1)")
    screens = Screens(IndexStore(projects=(str(project),)), SecretScreen.load(data))
    policies = PolicyStore()

    def both() -> Verdict:
        req = Outbound(path=PATH, body=s.body(), agent=None, project_root=None)
        got = screen(req, policies, screens)
        assert got == screen(req, PolicyStore(), _nothing(screens))
        return got

    both()
    for i in range(3):
        (project / "tmp").write_text(f"print({i})\n")
        os.replace(project / "tmp", project / "a.py")  # a new inode, as editors write
        s.call("Bash", {"command": "python a.py"}, str(i))
        walked = _convs(screens).walked
        assert both().withheld == ()
        assert _convs(screens).walked > walked
    (project / "a.py").unlink()
    os.symlink(project / ".env", project / "a.py")
    s.call("Bash", {"command": "ls"}, "a.py")
    verdict = both()  # the old read is withheld now
    assert [w.call_id for w in verdict.withheld] == [s.messages[1]["content"][1]["id"]]


def test_a_resent_body_takes_up_its_last_turn(gate_dirs: dict[str, Path]) -> None:
    project, data = gate_dirs["project"], gate_dirs["data"]
    data.mkdir(mode=0o700)
    env_value = "API_TOKEN=" + Gen(5).password(24)
    (project / ".env").write_text(env_value + "\n")
    s = Session(project, random.Random(1))
    s.call("Read", {"file_path": f"{project}/.env"}, env_value)
    s.call("Read", {"file_path": f"{project}/a.py"}, "print(1)")
    screens = Screens(IndexStore(projects=(str(project),)), SecretScreen.load(data))
    policies = PolicyStore()
    first = screen(
        Outbound(path=PATH, body=s.body(), agent=None, project_root=None), policies, screens
    )
    s.call("Bash", {"command": "ls"}, "a.py")
    convs = _convs(screens)
    walked, decided = convs.walked, convs.decided
    second = screen(
        Outbound(path=PATH, body=s.body(), agent=None, project_root=None), policies, screens
    )
    # Its first messages' walks and both earlier calls' decisions taken from the first turn.
    assert convs.walked - walked >= len(s.messages) - 3 and convs.decided - decided == 2
    assert first.body is not None and second.body is not None
    assert env_value.encode() not in second.body
    assert orjson.loads(second.body)["messages"][:-3] == orjson.loads(first.body)["messages"][:-1]
    assert [w.call_id for w in second.withheld] == [w.call_id for w in first.withheld]


def test_conversations_side_by_side_keep_their_own_turns(gate_dirs: dict[str, Path]) -> None:
    """Agents side by side (or subagents) start with the same messages. Each next turn
    takes up its own conversation's last turn: not another's that shares only the first
    messages (everything after them walked again), and without evicting the others."""
    project, data = gate_dirs["project"], gate_dirs["data"]
    data.mkdir(mode=0o700)
    sessions = [Session(project, random.Random(7)) for _ in range(3)]  # the same start
    screens = Screens(IndexStore(projects=(str(project),)), SecretScreen.load(data))
    convs, policies = _convs(screens), PolicyStore()
    for turn in range(4):
        for i, s in enumerate(sessions):
            s.call("Bash", {"command": f"echo {i}-{turn}"}, f"out {i} {turn}")
            req = Outbound(path=PATH, body=s.body(), agent=None, project_root=None)
            walked = convs.walked
            got = screen(req, policies, screens)
            assert got == screen(req, policies, _nothing(screens))
            if turn:  # from its own last turn, which it replaced
                assert convs.walked - walked >= len(s.messages) - 3
                assert len(convs) == len(sessions)


def test_a_turn_is_screened_from_its_own_session_only(gate_dirs: dict[str, Path]) -> None:
    """The same conversation is the audit's session (audit/session.py): a body that another
    session's last turn would continue is walked and decided whole, with the verdict it
    would get."""
    project, data = gate_dirs["project"], gate_dirs["data"]
    data.mkdir(mode=0o700)
    s = Session(project, random.Random(3))
    s.call("Read", {"file_path": f"{project}/a.py"}, "print(1)")
    screens = Screens(IndexStore(projects=(str(project),)), SecretScreen.load(data))
    convs, policies = _convs(screens), PolicyStore()

    def req(session: str) -> Outbound:
        return Outbound(path=PATH, body=s.body(), agent=None, project_root=None, session=session)

    screen(req("s:one"), policies, screens)
    s.call("Bash", {"command": "ls"}, "a.py")
    got = screen(req("s:two"), policies, screens)
    assert (convs.walked, convs.decided, convs.taken) == (0, 0, 0)  # not continued
    assert got == screen(req("s:two"), policies, _nothing(screens))
    s.call("Bash", {"command": "pwd"}, str(project))
    screen(req("s:two"), policies, screens)
    assert convs.walked and convs.decided and convs.taken  # its own
