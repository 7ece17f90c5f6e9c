"""A next turn of a conversation screened from what it added to a kept Turn.

Only the bytes between the shared messages and the shared end are parsed, walked and
screened; the frame's and shared messages' outcomes are reused; each file the reused tool
decisions looked at is stat'ed once, and the calls on a file that is another file now
(an edit that renamed over it, a swapped symlink) are decided again; the verdict is put
together in the order screening the whole body gives. Anything the whole-body path would
treat differently (a decision that changed, say) is a Miss, and that path screens it.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import orjson
from loguru import logger

from gate.agents import background, shell_state, tools
from gate.providers import anthropic
from gate.providers.segments import Role, Segment, ToolCall, item_strings, set_at
from gate.rules.engine import Policy, identity, stamp_of, targets
from gate.rules.layers import PolicyStore
from gate.screen import calls as tool_calls
from gate.screen import content, layout
from gate.screen.calls import SHORTEST
from gate.screen.codec import unique
from gate.screen.content import Outcome, SecretScreen
from gate.screen.fingerprints import IndexStore
from gate.screen.turn import Call, Files, Message, Turn, said
from gate.screen.verdict import Outbound, Verdict, Withheld


class Miss(Exception):
    """This body is not a next turn the fast path can screen exactly."""


def step(
    turn: Turn,
    k: int,
    req: Outbound,
    policies: PolicyStore,
    indexes: IndexStore | None,
    secrets: SecretScreen | None,
) -> tuple[Verdict, Turn]:
    """Screen the messages after the first k of `turn` that `req.body` shares with it."""
    body = req.body
    close = len(body) - (len(turn.raw) - turn.close)
    rest = body[turn.ends[k] : close].lstrip(b" \t\r\n")
    if k and rest:
        if rest[:1] != b",":
            raise Miss("the messages do not continue after the shared ones")
        rest = rest[1:]
    try:
        added = b"[" + rest + b"]"
        new = orjson.loads(added) if rest.strip() else []
        if new:
            unique(added, new)  # one meaning only: the whole-body path says where not
    except ValueError as exc:
        raise Miss("the new messages do not parse as strict JSON") from exc
    ends = layout.items(rest.decode("latin-1"), 0, close - len(rest))
    if len(ends) != len(new) or not all(isinstance(m, dict) for m in new):
        raise Miss("the new messages are not objects")
    walked = [anthropic.walk_message(m, (layout.KEY, k + j)) for j, m in enumerate(new)]
    msgs = (
        *turn.msgs[:k],
        *(
            Message(
                tuple(s.text for s in segs if s.role is Role.SYSTEM),
                tuple(s.text for s in segs if s.role is Role.USER_TEXT)[:3],
            )
            for segs, _, _ in walked
        ),
    )
    prompt = turn.prompt_of(k)
    if new:
        prompt = (
            (*prompt[0], *(t for m in msgs[k:] for t in m.system)),
            (*prompt[1], *(t for m in msgs[k:] for t in m.users))[:3],
        )
    cwd = (
        turn.cwd
        if prompt == turn.prompt
        else (req.project_root or tools.working_directory([*prompt[0], *prompt[1]]))
    )
    if cwd != turn.cwd:
        raise Miss("the working directory changed")
    root = req.root or (policies.roots.of(cwd) if cwd else None)
    policy = tool_calls.policy_for(
        policies,
        indexes,
        root,
        stated=req.project_root is None,
    )
    index = tool_calls.denied_index(
        indexes,
        policies,
        policy,
        root,
        stated=req.project_root is None,
    )
    if policy is not turn.policy or index is not turn.index or secrets is not turn.secrets:
        raise Miss("the rules, denied files or secret screen changed")
    if indexes and indexes.unwalked(root):
        raise Miss("the denied-file index is incomplete: searches are decided whole")
    fake: dict[str, list[Any]] = {layout.KEY: [None] * k + new}  # paths resolve as in a body
    made, where, answers, fresh = _calls(turn, k, new, walked, cwd)
    files = _revalidated(turn, made, k, policy, root)
    for i in fresh:  # answered in a new message: decided now
        c = made[i]
        assert c.at is not None
        if c.name in background.FOLLOW_UPS or background.output_file(c.action):
            raise Miss("a background task's output is decided as its command")
        result = next(p for cid, p in walked[c.at - k][2] if cid == c.id)
        decision = policy.decide(c.action, root)
        stamp_of(c.action, root, files)
        made[i] = replace(
            c,
            decision=decision,
            item=tool_calls.withhold(
                anthropic,
                fake,
                ToolCall(c.id, c.name, {}, result),
                c.action,
                decision,
                req.approved,
                secrets,
            ),
        )
    cut = len(made) - sum(len(u) for _, u, _ in walked)  # made[:cut]: the shared messages'
    items = sorted({*(i for i in turn.items if i < cut), *fresh})
    withheld: list[Withheld] = [w for i in items if (w := made[i].item) is not None]
    done = {w.call_id for w in withheld if not (w.asked and w.asked.approved)}
    outcomes: list[Outcome] = []
    extras: list[Outcome] = []
    outcome_ends, extra_ends = list(turn.outcome_ends[:k]), list(turn.extra_ends[:k])
    for j, (segs, _, _) in enumerate(walked):
        extra: tuple[Segment, ...] = ()
        if index or secrets:
            extra = content.unknown(
                item_strings(new[j], (layout.KEY, k + j), SHORTEST),
                {s.path for s in segs},
                index,
                secrets,
            )
        outcomes += content.screened(segs, done, index, secrets, policy, req.approved)
        extras += content.screened(extra, done, index, secrets, policy, req.approved)
        outcome_ends.append(len(outcomes) + (outcome_ends[k - 1] if k else 0))
        extra_ends.append(len(extras) + (extra_ends[k - 1] if k else 0))
    shared_outcomes = turn.outcomes[: turn.outcome_ends[k - 1] if k else 0]
    shared_extras = turn.extras[: turn.extra_ends[k - 1] if k else 0]
    withheld += content.tally(
        [
            *turn.head,
            *shared_outcomes,
            *outcomes,
            *turn.before,
            *shared_extras,
            *extras,
            *turn.after,
        ],
        _Names(made),
    )
    for o in (*outcomes, *extras):
        if o.text != o.seg.text:
            set_at(fake, o.seg.path, o.text)
    out, outs, frame = None, turn.outs[:k], turn.frame
    if any(not (w.asked and w.asked.approved) for w in withheld):
        out, outs, frame = _rewritten(turn, k, new, body)
        logger.debug(
            "withheld {} item(s): {}", len(withheld), ", ".join(sorted({w.rule for w in withheld}))
        )
    nxt = replace(
        turn,
        raw=body,
        ends=(*turn.ends[: k + 1], *ends),
        close=close,
        msgs=msgs,
        calls=tuple(made),
        where=where,
        answers=answers,
        items=tuple(items),
        files=files,
        outs=outs if len(outs) == len(msgs) else (),
        frame=frame,
        prompt=prompt,
        said=said(msgs, k, tuple(i for i in turn.said if i < k)),
        outcomes=(*shared_outcomes, *outcomes),
        outcome_ends=tuple(outcome_ends),
        extras=(*shared_extras, *extras),
        extra_ends=tuple(extra_ends),
    )
    return Verdict(
        body=out,
        format=anthropic.FORMAT,
        model=turn.model,
        project_root=root,
        withheld=tuple(withheld),
    ), nxt


def _revalidated(turn: Turn, made: list[Call], k: int, policy: Policy, root: str | None) -> Files:
    """The files the reused decisions looked at, as they are now. A file that is another
    file now (edited by renaming over it, a symlink swapped) has its calls decided again,
    as the whole-body path's rule cache does; a decision that differs is a miss."""
    files = dict(turn.files)
    changed = set()
    for key, was in turn.files.items():
        if (now := identity(*key)) != was:
            changed.add(key)
            files[key] = now
    if changed:
        for c in made:
            if (
                c.at is not None
                and c.at < k
                and changed.intersection((t, root) for t in targets(c.action))
                and policy.decide(c.action, root) != c.decision
            ):
                raise Miss(f"the decision on call {c.id} changed with the files it names")
    return files


def _rewritten(
    turn: Turn, k: int, new: list[dict[str, Any]], body: bytes
) -> tuple[bytes, tuple[bytes, ...], tuple[bytes, bytes]]:
    """The edited body put together as the whole-body path writes it: the frame around
    each message's orjson.dumps (the shared ones' kept from their turn)."""
    frame, shared = turn.frame, turn.outs[:k]
    try:
        if frame is None or len(shared) < k:
            # The kept turn was not rewritten, so nothing in it was edited: the frame and
            # the shared messages are written as parsed from their bytes (once a
            # conversation first withholds something; later turns reuse them).
            start, close = turn.ends[0], len(body) - (len(turn.raw) - turn.close)
            frame = frame or layout.frame(orjson.loads(body[:start] + body[close:]))
            shared = (
                tuple(
                    orjson.dumps(m) for m in orjson.loads(b"[" + body[start : turn.ends[k]] + b"]")
                )
                if k
                else ()
            )
        outs = (*shared, *(orjson.dumps(m) for m in new))
    except (orjson.JSONEncodeError, orjson.JSONDecodeError, TypeError) as exc:
        raise Miss("a message needs the standard library's writer") from exc
    return layout.assemble(frame, outs), outs, frame


def _calls(
    turn: Turn, k: int, new: list[dict[str, Any]], walked: list[anthropic.Message], cwd: str | None
) -> tuple[list[Call], dict[str, int], tuple[tuple[int, ...], ...], list[int]]:
    """The calls of the shared messages (answered in a later one: open again), then the new
    ones; which call each message answers; the calls the new messages answer. A body the
    whole-body walk refuses (a call id twice, a result answering nothing open) is a miss."""
    cut = bisect.bisect_left(turn.calls, k, key=lambda c: c.msg)
    made = list(turn.calls[:cut])
    where = dict(turn.where)
    for c in turn.calls[cut:]:
        del where[c.id]
    for m in range(k, len(turn.msgs)):
        for i in turn.answers[m]:
            if i < cut:
                made[i] = replace(made[i], at=None, decision=None, item=None)
    answers: list[tuple[int, ...]] = list(turn.answers[:k])
    for j, (_, uses, _) in enumerate(walked):
        for call_id, name, b in uses:
            if call_id in where:
                raise Miss("two tool calls share an id")
            inp = new[j]["content"][b].get("input")
            where[call_id] = len(made)
            action = tools.action(name, inp if isinstance(inp, dict) else {}, cwd)
            # As the whole-body path decides it: after the files earlier calls sourced.
            sourced = tuple(p for c in made for p in shell_state.sourcing(c.action))
            made.append(Call(call_id, name, shell_state.after(action, sourced), k + j))
    fresh: list[int] = []
    for j, (_, _, results) in enumerate(walked):
        here = []
        for call_id, _ in results:
            i = where.get(call_id, -1)
            if i < 0 or made[i].at is not None:
                raise Miss(f"tool result {call_id} answers no open call")
            made[i] = replace(made[i], at=k + j)
            here.append(i)
        answers.append(tuple(here))
        fresh += here
    return made, where, tuple(answers), fresh


class _Names(Mapping[str, str]):
    """Call id → tool name, worked out only if a secret in a tool result asks for it."""

    def __init__(self, calls: list[Call]):
        self._calls = calls
        self._names: dict[str, str] | None = None

    def _all(self) -> dict[str, str]:
        if self._names is None:
            self._names = {c.id: c.name for c in self._calls}
        return self._names

    def __getitem__(self, key: str) -> str:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())
