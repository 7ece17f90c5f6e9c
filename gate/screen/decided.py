"""Each tool call of a body decided, the leading ones taken from the conversation's last turn.

A conversation's next turn starts with the very segments and tool calls its last turn
walked (gate/providers/history.py takes them up by identity). What screening made of them
is kept per conversation (`Decided`, in gate/screen/prefix.py's Conversation) and reused
only where it is what working it out again gives:

- the working directory, from the same prompt texts (the same string objects);
- a call's action and the shell state it runs in, for the same leading calls under the
  same working and home directories (an action is a function of them; the shell state of
  the calls before it);
- the background tasks a result says it started, for the same leading segments;
- a call's decision, under the same Policy object (one whose decisions depend on the
  files its targets name only: not a joined one), project root, and a complete denied
  index, while every file the last turn's decisions looked at is the same file (one stat
  each, as the rules' own cache checks), for a call that neither turn ties to others
  (a background task's output, a Gemini call paired by name): those are decided again.

A result a deny or ask rule withholds is withheld in this body again. Everything else is
worked out as for a body seen for the first time, in the same order, so the decisions are
the ones a screening that keeps nothing makes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gate.agents import background, shell_state, tools
from gate.agents.action_memo import ActionOf
from gate.agents.actions import Action
from gate.providers.format import Format
from gate.providers.history import same_prefix
from gate.providers.segments import Role, Segment, ToolCall, Walk
from gate.rules.engine import Decision, Policy, identity
from gate.rules.model import Effect
from gate.screen import calls, incomplete
from gate.screen.body_items import Body
from gate.screen.content import SecretScreen
from gate.screen.verdict import Withheld

Entry = tuple[ToolCall, Action, Decision | None, Withheld | None]
Files = dict[tuple[str, str | None], object]  # (path, root) → which file it named
_STRICT = (Effect.DENY, Effect.ASK)


class Decided:
    """What one turn made of its tool calls, for the conversation's next turn."""

    __slots__ = (
        "actions",
        "calls",
        "cwd",
        "entries",
        "files",
        "home",
        "policy",
        "root",
        "said",
        "segs",
        "sourced",
        "sourced_ends",
        "started",
        "strict",
        "system",
        "taken",
        "texts",
        "tied",
        "users",
        "whole",
    )

    def __init__(self) -> None:
        self.segs: tuple[Segment, ...] = ()
        self.system: list[int] = []  # where the system-role segments are
        self.users: list[int] = []  # where the first three user texts are
        self.texts: list[str] = []  # the prompt texts the working directory was read from
        self.said: str | None = None  # the working directory they state
        self.cwd: str | None = None
        self.home: str | None = None
        self.calls: tuple[ToolCall, ...] = ()
        self.actions: list[Action] = []  # each call's, in the shell state it ran in
        self.sourced: tuple[str, ...] = ()  # the files the calls sourced, in order
        self.sourced_ends: list[int] = [0]  # [i]: how many of them calls[:i] sourced
        self.started: list[background.Start] = []  # tasks the results say they started
        self.policy: Policy | None = None
        self.root: str | None = None
        self.whole = False  # the denied index was complete (no search decided wider)
        self.files: Files = {}
        self.entries: list[Entry] = []
        self.strict: list[int] = []  # the entries decided deny or ask
        self.taken = 0  # decisions taken from the last turn (a figure for tests, benches)
        self.tied: frozenset[str] = frozenset()  # calls decided with others they may be


def working_directory(walk: Walk, prev: Decided, n: int, new: Decided) -> str | None:
    """calls.working_directory(walk), the prompt texts of the first n segments (the last
    turn's) found where they were; recorded in `new`."""
    segs = walk.segments
    kept = not prev.system or prev.system[-1] < n  # every system text of the last turn's
    new.system = prev.system if kept else [p for p in prev.system if p < n]
    more = [i for i in range(n, len(segs)) if segs[i].role is Role.SYSTEM]
    new.users = [p for p in prev.users if p < n]
    i = n
    while len(new.users) < 3 and i < len(segs):
        if segs[i].role is Role.USER_TEXT:
            new.users.append(i)
        i += 1
    if kept and not more and new.users == prev.users and prev.texts:
        new.texts, new.said = prev.texts, prev.said  # the same strings: what they said
        return new.said
    new.system = new.system + more
    new.texts = [segs[p].text for p in (*new.system, *new.users)]
    if len(new.texts) == len(prev.texts) and same_prefix(prev.texts, new.texts) == len(new.texts):
        new.said = prev.said
    else:
        new.said = tools.working_directory(new.texts)
    return new.said


def actions(
    walk: Walk, cwd: str | None, prev: Decided, new: Decided, action_of: ActionOf
) -> list[Action]:
    """Each call's action (`action_of`: tools.action, or a gate's memo of it) in the shell
    state the calls before it leave; the leading calls the last turn's (the same objects,
    under the same directories) taken as they were."""
    home = os.environ.get("HOME")
    m = 0
    if prev.cwd == cwd and prev.home == home and prev.calls:
        m = same_prefix(prev.calls, walk.calls)
    new.cwd, new.home, new.calls = cwd, home, walk.calls
    sourced = dict.fromkeys(prev.sourced[: prev.sourced_ends[m]]) if m else {}
    new.sourced_ends = prev.sourced_ends[: m + 1] if m else [0]
    fresh = [action_of(c.name, c.input, cwd) for c in walk.calls[m:]]
    new.actions = prev.actions[:m] + shell_state.carry(fresh, sourced, new.sourced_ends)
    new.sourced = tuple(sourced)
    return new.actions


def started(
    walk: Walk, quiet: background.Quiet | None, prev: Decided, n: int, new: Decided
) -> dict[str, tuple[ToolCall, ...]]:
    """background.producers(walk, quiet), the starts found in the first n segments (the
    last turn's) taken as they were."""
    new.started = [s for s in prev.started if s[0] < n]
    new.started += background.starts(walk.segments, quiet, n)
    return background.producers(walk, new.started)


def decide(
    walk: Walk,
    acts: Sequence[Action],
    fmt: Format | None,
    body: Any,
    ctx: Context,
    prev: Decided,
    new: Decided,
) -> list[Entry]:
    """Each call with its action, and an answered one with its decision and what its rule
    withheld, in call order (see the module's docstring for what is taken as it was)."""
    policy, root = ctx.policy, ctx.root
    tied = {*ctx.same_name, *ctx.started}
    new.policy, new.root, new.whole, new.tied = policy, root, not ctx.unwalked, frozenset(tied)
    m = 0
    if (
        policy.BY_STAMP
        and new.whole
        and prev.whole
        and policy is prev.policy
        and root == prev.root
        and all(identity(*key) == was for key, was in prev.files.items())
    ):
        m = same_prefix(prev.calls, walk.calls)
        m = min(m, len(prev.entries), len(acts), same_prefix(prev.actions, acts))
        for cid in tied | prev.tied:  # decided with others now or then: decided again
            for i, c in enumerate(walk.calls[:m]):
                if c.id == cid:
                    m = i
                    break
    new.taken = m
    files: Files = dict(prev.files) if m else {}
    out: list[Entry] = prev.entries[:m]
    new.strict = [i for i in prev.strict if i < m]
    for i in new.strict:
        call, action, decision, _ = out[i]
        assert decision is not None
        out[i] = _entry(call, action, decision, fmt, body, ctx)  # withheld in this body
    for call, action in zip(walk.calls[m:], acts[m:], strict=True):
        if call.result is None:
            out.append((call, action, None, None))
            continue
        decision = policy.decide(action, root, files)
        if (wide := incomplete.widened(action, ctx.unwalked, ctx.cwd)) is not None and (
            (wider := policy.decide(wide, root, files)).effect in _STRICT
            and decision.effect not in _STRICT
        ):
            decision, action = wider, wide  # a search over files not indexed yet
        for other in (*ctx.same_name.get(call.id, ()), *ctx.started.get(call.id, ())):
            # Paired by name and order only, or a later output of a command started earlier:
            # the strictest call it could answer decides.
            decision, action = calls.stricter(
                (decision, action), policy, root, ctx.cwd, other, ctx.action_of
            )
        if decision.effect in _STRICT:
            new.strict.append(len(out))
        out.append(_entry(call, action, decision, fmt, body, ctx))
    new.files, new.entries = files, out
    return out


@dataclass(frozen=True, slots=True, kw_only=True)
class Context:
    """What every call of one body is decided under."""

    policy: Policy
    root: str | None
    cwd: str | None
    unwalked: tuple[str, ...]
    same_name: Mapping[str, tuple[ToolCall, ...]]
    started: Mapping[str, tuple[ToolCall, ...]]
    approved: frozenset[str]
    secrets: SecretScreen | None
    read: Body | None
    action_of: ActionOf  # tools.action, or the gate's memo of it


def _entry(
    call: ToolCall, action: Action, decision: Decision, fmt: Format | None, body: Any, ctx: Context
) -> Entry:
    if ctx.read is not None and decision.effect in _STRICT:
        assert call.result is not None
        ctx.read.own(call.result)  # withholding edits it: this body's copy, no other
    return (
        call,
        action,
        decision,
        calls.withhold(fmt, body, call, action, decision, ctx.approved, ctx.secrets),
    )
