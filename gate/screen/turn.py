"""What screening one Anthropic body leaves for the conversation's next turn (a Turn), and
how much of a later body is that conversation again, byte for byte."""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from gate.agents.actions import Action
from gate.providers.segments import Role, Segment
from gate.rules.engine import Decision, Policy, stamp_of
from gate.screen import layout
from gate.screen.content import Outcome, SecretScreen
from gate.screen.fingerprints import DeniedIndex
from gate.screen.verdict import Outbound, Withheld
from gate.screen.worked import Worked

Prompt = tuple[tuple[str, ...], tuple[str, ...]]


@dataclass(frozen=True, slots=True)
class Message:
    """A message's texts that may state a working directory."""

    system: tuple[str, ...]  # system-role texts
    users: tuple[str, ...]  # its first user texts


@dataclass(frozen=True, slots=True)
class Call:
    id: str
    name: str
    action: Action
    msg: int  # the message that makes it
    at: int | None = None  # the message that answers it
    decision: Decision | None = None  # on its result, when answered
    item: Withheld | None = None  # what its rule withheld


Files = dict[tuple[str, str | None], object]  # (path, root) → which file it named


@dataclass(frozen=True, slots=True)
class Turn:
    raw: bytes
    key: tuple[object, ...]  # path, project root, approved answers, HOME
    policy: Policy
    index: DeniedIndex | None
    secrets: SecretScreen | None
    cwd: str | None
    root: str | None
    model: str | None
    ends: tuple[int, ...]  # ends[k]: just past the first k messages (0: the "[")
    close: int  # the messages' "]"
    msgs: tuple[Message, ...]
    calls: tuple[Call, ...]  # in the order they are made
    where: dict[str, int]  # call id → its index in calls
    answers: tuple[tuple[int, ...], ...]  # per message: the calls it answers
    items: tuple[int, ...]  # the calls whose rule withheld their result
    files: Files  # what the decisions looked at, as it was
    # Outcomes of the messages' walked strings and unknown strings, in order; the first
    # ends[k - 1] of them are the first k messages'.
    outcomes: tuple[Outcome, ...]
    outcome_ends: tuple[int, ...]
    extras: tuple[Outcome, ...]
    extra_ends: tuple[int, ...]
    head: tuple[Outcome, ...]  # outcomes of the walked strings outside the messages
    before: tuple[Outcome, ...]  # outcomes of unknown strings in keys before the messages
    after: tuple[Outcome, ...]  # ... and after them
    system: tuple[str, ...]  # system-role texts outside the messages
    frame: tuple[bytes, bytes] | None  # a rewritten body around its messages
    outs: tuple[bytes, ...]  # the first messages' orjson.dumps as edited (all, or none)
    prompt: Prompt  # what cwd was read from
    said: tuple[int, ...]  # the messages that hold any of `prompt`

    @property
    def size(self) -> int:
        return len(self.raw) * (2 if self.outs else 1)

    def prompt_of(self, k: int) -> Prompt:
        """The prompt texts of the frame and the first k messages."""
        if not self.said or self.said[-1] < k:
            return self.prompt
        return prompt(self.system, [self.msgs[i] for i in self.said if i < k])

    def shared(self, body: bytes) -> int | None:
        """How many leading messages `body` shares with this turn's, byte for byte, when
        it also ends as this one does from the messages' "]"; None if it does not."""
        tail = len(self.raw) - self.close
        view = memoryview(self.raw)
        if len(body) < self.ends[0] + tail or not body.endswith(view[self.close :]):
            return None
        close = len(body) - tail
        ends = self.ends

        def same(k: int, checked: int = 0) -> bool:  # bytes before `checked` are known same
            return ends[k] <= close and body.startswith(view[checked : ends[k]], checked)

        n = len(self.msgs)
        k = max(n - 2, 0)  # the usual: all but the last one or two (a moved cache mark)
        if same(k):
            while k < n and same(k + 1, ends[k]):
                k += 1
            return k
        lo, hi = 0, k - 1
        if not same(0):
            return None
        while lo < hi:  # the largest k that holds, given same(lo)
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if same(mid) else (lo, mid - 1)
        return lo


def key_of(req: Outbound) -> tuple[object, ...]:
    return (
        req.path,
        req.session,
        req.project_root,
        req.approved,
        os.environ.get("HOME"),
        req.root,
    )


def prompt(system: tuple[str, ...], msgs: Iterable[Message]) -> Prompt:
    """The texts a working directory is read from: system-role texts, first 3 user texts."""
    users: list[str] = []
    more: list[str] = []
    for m in msgs:
        more += m.system
        if len(users) < 3:
            users += m.users
    return (*system, *more), tuple(users[:3])


def said(msgs: Sequence[Message], start: int = 0, before: tuple[int, ...] = ()) -> tuple[int, ...]:
    """`before` (indexes below `start`) and the messages from `start` on that hold any
    prompt text: system-role texts, or one of the first 3 user texts."""
    users = sum(len(msgs[i].users) for i in before)
    out = list(before)
    for i in range(start, len(msgs)):
        m = msgs[i]
        if m.system or (m.users and users < 3):
            out.append(i)
        users += len(m.users)
    return tuple(out)


def first(
    req: Outbound, worked: Worked, secrets: SecretScreen | None, where: layout.Layout | None
) -> Turn | None:
    """A Turn from a body screened whole, or None when its shape does not allow one."""
    body = worked.body
    messages = body.get(layout.KEY) if isinstance(body, dict) else None
    if where is None or not isinstance(messages, list) or len(messages) != len(where.ends):
        return None
    per: list[tuple[list[Outcome], list[Outcome], list[str], list[str]]] = [
        ([], [], [], []) for _ in messages
    ]
    head: list[Outcome] = []
    for o in worked.outcomes:
        if (i := msg_of(o.seg)) is not None:
            per[i][0].append(o)
        elif any(p[0] for p in per):
            return None  # not the walk order a next turn puts back together
        else:
            head.append(o)
    keys = list(body)
    frame_extras: tuple[list[Outcome], list[Outcome]] = ([], [])
    for o in worked.extras:
        if (i := msg_of(o.seg)) is not None:
            per[i][1].append(o)
        else:
            frame_extras[keys.index(o.seg.path[0]) > keys.index(layout.KEY)].append(o)
    system: list[str] = []
    for seg in worked.walk.segments:
        i = msg_of(seg)
        if seg.role is Role.SYSTEM:
            (system if i is None else per[i][2]).append(seg.text)
        elif seg.role is Role.USER_TEXT and i is not None:
            per[i][3].append(seg.text)
    made = _makers(messages)
    found: list[Call] = []
    answers: list[list[int]] = [[] for _ in messages]
    files: Files = {}
    for call, action, decision, item in worked.calls:
        at = call.result[1] if call.result else None
        if call.id not in made or not (at is None or isinstance(at, int)):
            return None
        if decision is not None:
            stamp_of(action, worked.root, files)
        if at is not None:
            answers[at].append(len(found))
        found.append(Call(call.id, call.name, action, made[call.id], at, decision, item))
    if any(a.msg > b.msg for a, b in itertools.pairwise(found)):
        return None  # calls out of message order: not a conversation a next turn extends
    frame = None
    outs: list[bytes] = []
    if worked.rewrite:
        try:
            frame = layout.frame(body)
            outs = [orjson.dumps(m) for m in messages]
        except (orjson.JSONEncodeError, TypeError):
            return None  # written by the standard library instead: not put together
    msgs = tuple(Message(tuple(s), tuple(u[:3])) for _, _, s, u in per)
    outcomes, extras = _flat([p[0] for p in per]), _flat([p[1] for p in per])
    return Turn(
        req.body,
        key_of(req),
        worked.policy,
        worked.index,
        secrets,
        worked.cwd,
        worked.root,
        worked.model,
        (where.start, *where.ends),
        where.close,
        msgs,
        tuple(found),
        {c.id: i for i, c in enumerate(found)},
        tuple(tuple(a) for a in answers),
        tuple(i for i, c in enumerate(found) if c.item is not None),
        files,
        *outcomes,
        *extras,
        tuple(head),
        tuple(frame_extras[0]),
        tuple(frame_extras[1]),
        tuple(system),
        frame,
        tuple(outs),
        prompt(tuple(system), msgs),
        said(msgs),
    )


def _flat(lists: list[list[Outcome]]) -> tuple[tuple[Outcome, ...], tuple[int, ...]]:
    flat: list[Outcome] = []
    ends = []
    for x in lists:
        flat += x
        ends.append(len(flat))
    return tuple(flat), tuple(ends)


def msg_of(seg: Segment) -> int | None:
    p = seg.path
    return p[1] if p[0] == layout.KEY and len(p) > 1 and isinstance(p[1], int) else None


def _makers(messages: list[Any]) -> dict[str, int]:
    """Which message makes each tool call."""
    out = {}
    for i, msg in enumerate(messages):
        for block in msg.get("content") or () if isinstance(msg.get("content"), list) else ():
            if isinstance(block, dict) and block.get("type") == "tool_use":
                out[str(block.get("id"))] = i
    return out
