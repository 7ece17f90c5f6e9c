"""Screen one outbound request body: walk it, decide each tool call, withhold in place."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Any

import orjson
from loguru import logger

from gate import providers
from gate.agents import tools
from gate.agents.action_memo import ActionMemo
from gate.providers import history, openai_assistants
from gate.providers.format import Format
from gate.providers.history import Memo, same_prefix
from gate.providers.segments import (
    UNSEEN,
    JsonPath,
    Segment,
    Strings,
    ToolCall,
    Unit,
    Walk,
    item_strings,
    list_item_strings,
    set_at,
    unit_strings,
    unit_strings_after,
)
from gate.rules.engine import Policy
from gate.rules.layers import PolicyStore
from gate.screen import calls, content, decided, upload
from gate.screen.body_items import Body, BodyItems
from gate.screen.calls import SHORTEST
from gate.screen.codec import Ambiguous, dump, parse, unique
from gate.screen.content import Outcome, SecretScreen
from gate.screen.decided import Decided
from gate.screen.fingerprints import DeniedIndex, IndexStore
from gate.screen.item_cache import ItemCache, Kept
from gate.screen.prefix import Conversation, Conversations
from gate.screen.verdict import Blocked, Outbound, Verdict, Withheld

UNSEEN_CALL = "a tool call gate did not see"

__all__ = [
    "Blocked",
    "Outbound",
    "Screens",
    "Verdict",
    "Withheld",
    "dump",
    "parse",
    "screen",
    "screen_object",
]


@dataclass(frozen=True, slots=True)
class Screens:
    """The content screens a gate runs besides tool rules (tests may run without them), and
    what they made of the strings screened so far (`items`: None screens every string anew)
    and of the items parsed so far (`bodies`: None parses every body whole)."""

    indexes: IndexStore | None = None
    secrets: SecretScreen | None = None
    items: ItemCache | None = field(default_factory=ItemCache)
    # What walking each item of a conversation gave (None: every item walked anew).
    walks: Memo | None = field(default_factory=Memo)
    # Each body's items as read before (None: every body parsed whole).
    bodies: BodyItems | None = field(default_factory=BodyItems)
    # Each conversation's last turn, its outcomes in order (None: each string looked up).
    conversations: Conversations | None = field(default_factory=Conversations)
    # The actions tool calls were mapped to (None: every call mapped anew).
    actions: ActionMemo | None = field(default_factory=ActionMemo)


def screen(
    req: Outbound,
    policies: PolicyStore,
    screens: Screens | None = None,
    known_for: Callable[[str], Mapping[str, tuple[str, Mapping[str, Any]]]] | None = None,
) -> Verdict:
    """Decide what leaves. Raises Blocked (or anything else) when it must not leave."""
    if not req.body.strip():
        return Verdict(
            body=None, format=None, model=None, project_root=req.root or req.project_root
        )
    if (how := upload.kind(req)) is not None:  # a file upload: its parts, as text
        return upload.screen(req, how, _upload(policies, screens))
    fmt = providers.detect(req.path)
    read = None
    if fmt is not None and screens is not None and screens.bodies is not None:
        read = screens.bodies.read(req.body, fmt.FORMAT)  # None: parsed whole, below
    try:
        if read is not None:
            body = read.value
        else:
            body = orjson.loads(req.body)
            unique(req.body, body)
    except orjson.JSONDecodeError:
        try:
            body = parse(req.body)
        except Ambiguous as exc:
            raise Blocked(f"gate cannot screen this request: {exc}") from exc
        except (UnicodeDecodeError, ValueError) as exc:
            if req.unsafe_pass_non_json:
                logger.warning("forwarding a non-JSON body unscreened (upstream opted out)")
                return Verdict(
                    body=None,
                    format="unscreened",
                    model=None,
                    project_root=req.root or req.project_root,
                )
            # Fail closed: a body gate cannot parse is a body gate cannot screen.
            raise Blocked(
                "gate cannot screen this request: the body is not JSON"
                f" ({_syntax(exc)}). A file upload is not screened: send it"
                " without gate, or give its upstream `unsafe_pass_non_json: true`"
                " (docs/usage.md), which forwards it unscreened"
            ) from exc
    except Ambiguous as exc:  # JSON with two meanings is refused even where non-JSON passes
        raise Blocked(f"gate cannot screen this request: {exc}") from exc
    if fmt is None:
        _refuse_token_ids(req.path, body)
        return screen_strings(req, body, policies, screens)
    if not isinstance(body, dict):
        raise Blocked(f"gate cannot screen this request: a {fmt.FORMAT} body must be an object")
    known = None
    if known_for is not None and isinstance(prev := body.get("previous_response_id"), str):
        known = known_for(prev)  # calls a stored response made: its outputs pair with them
    if (
        known_for is not None
        and fmt is openai_assistants
        and (run := openai_assistants.submitted_to(req.path))
    ):
        # The calls the run asked outputs for, as gate saw them in an earlier reply.
        known = known_for(openai_assistants.run_key(*run))
    return _screen(fmt, req, body, policies, known, screens, read)


# Fields that OpenAI-compatible APIs read as text given as token ids: what the provider's
# tokenizer turns back into text gate cannot read (`prompt` on /completions, `input` on
# /embeddings, as a list of integers or a list of such lists).
_TOKEN_ID_FIELDS = (("/completions", "prompt"), ("/embeddings", "input"))


def _refuse_token_ids(path: str, body: Any) -> None:
    """Fail closed on token ids: any text, a denied file included, can be sent as them."""
    path = path.partition("?")[0].rstrip("/")
    if not isinstance(body, dict) or path.endswith("/chat/completions"):
        return
    for tail, name in _TOKEN_ID_FIELDS:
        value = body.get(name)
        if path.endswith(tail) and isinstance(value, list) and _holds_ids(value):
            raise Blocked(
                f"gate cannot screen this request: `{name}` holds token ids, which only the"
                " provider's tokenizer reads as text (any text can be sent so); send the"
                " text itself"
            )


def _holds_ids(items: list[Any]) -> bool:
    for item in items:
        if isinstance(item, list):
            if _holds_ids(item):
                return True
        elif isinstance(item, int) and not isinstance(item, bool):
            return True
    return False


def screen_strings(
    req: Outbound, body: Any, policies: PolicyStore, screens: Screens | None = None
) -> Verdict:
    """A body in no format gate knows: every string is still screened for denied content and
    secrets; nothing is paired, so no tool rule applies."""
    with history.one_request(screens.walks if screens else None):
        return _decide(
            Walk(format="unknown", model=None, segments=(), calls=()),
            None,
            req,
            body,
            policies,
            screens,
        )


def screen_object(
    fmt: Format,
    req: Outbound,
    body: dict[str, Any],
    policies: PolicyStore,
    known: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
    screens: Screens | None = None,
) -> Verdict:
    """Screen an already parsed body in place (a WebSocket frame's payload, say).

    `known` holds calls seen earlier on the same connection (id → name, input): a result
    that answers one of them is decided like a result paired in the body itself.
    """
    return _screen(fmt, req, body, policies, known, screens)


def _screen(
    fmt: Format,
    req: Outbound,
    body: dict[str, Any],
    policies: PolicyStore,
    known: Mapping[str, tuple[str, Mapping[str, Any]]] | None,
    screens: Screens | None,
    read: Body | None = None,
) -> Verdict:
    convs = screens.conversations if screens and screens.items else None
    conv = None
    if convs is not None and read is not None:  # found by its items: its walks go on
        listed = read.as_read()
        conv = convs.of(req.session, listed, listed=True)
        if conv.source is not None:
            logger.debug(
                "next turn: {} of {} items reused, {} new",
                conv.shared,
                len(conv.listed),
                len(listed) - conv.shared,
            )
        conv.listed = listed
    with history.one_request(
        screens.walks if screens else None,
        read.frozen() if read else (),
        conv.walks if conv is not None else None,
        read.as_read() if read else (),
    ):
        try:
            walk = fmt.walk(body)
        except ValueError as exc:
            raise Blocked(f"gate cannot screen this request: {exc}") from exc
        if walk.orphans:
            # Fail closed: a result whose call gate never saw (a previous_response_id or a
            # conversation it does not know, a restart) is decided as the strictest call.
            known = known or {}
            extra = tuple(
                ToolCall(i, known[i][0], known[i][1], path)
                if i in known
                else ToolCall(i, UNSEEN_CALL, {UNSEEN: True}, path)
                for i, path in walk.orphans
            )
            walk = replace(walk, calls=walk.calls + extra)
        return _decide(walk, fmt, req, body, policies, screens, read, conv)


def _decide(
    walk: Walk,
    fmt: Format | None,
    req: Outbound,
    body: Any,
    policies: PolicyStore,
    screens: Screens | None,
    read: Body | None = None,
    conv: Conversation | None = None,
) -> Verdict:
    items = screens.items if screens else None
    convs = screens.conversations if screens and items else None
    if conv is None and convs is not None:
        conv = convs.of(req.session, walk.segments)
    # What the conversation's last turn made of the segments and calls this one starts with.
    prev = conv.decided if conv is not None else Decided()
    new = Decided()
    # Known from the walk (its lists taken up), else found by comparing.
    n = walk.shared or (same_prefix(prev.segs, walk.segments) if prev.segs else 0)
    new.segs = walk.segments
    said = decided.working_directory(walk, prev, n, new)
    cwd = req.project_root or said
    root = req.root or (policies.roots.of(cwd) if cwd else None)
    policy = calls.policy_for(
        policies,
        screens.indexes if screens else None,
        root,
        stated=req.project_root is None,
    )
    index = calls.denied_index(
        screens.indexes if screens else None,
        policies,
        policy,
        root,
        stated=req.project_root is None,
    )
    secrets = screens.secrets if screens else None
    memo = screens.actions if screens else None
    action_of = memo.action if memo is not None else tools.action
    actions = decided.actions(walk, cwd, prev, new, action_of)
    ctx = decided.Context(
        policy=policy,
        root=root,
        cwd=cwd,
        unwalked=screens.indexes.unwalked(root) if screens and screens.indexes else (),
        same_name=calls.same_name_candidates(walk),
        # A background task's output: decided as its command.
        started=decided.started(walk, items.quiet if items else None, prev, n, new),
        approved=req.approved,
        secrets=secrets,
        read=read,
        action_of=action_of,
    )
    entries = decided.decide(walk, actions, fmt, body, ctx, prev, new)
    if conv is not None:
        conv.decided = new
    # Only a call decided deny or ask withholds (new.strict: where, in order).
    withheld = [item for i in new.strict if (item := entries[i][3]) is not None]
    done = {w.call_id for w in withheld if not (w.asked and w.asked.approved)}
    outcomes, extras = _content(
        walk, body, done, index, secrets, policy, req.approved, items, conv, read, n
    )
    if convs is not None and conv is not None:
        convs.put(req.session, conv, len(req.body))
    found = [*outcomes, *extras]
    # Call id → tool name, for a secret found in a tool's output.
    names = {c.id: c.name for c in walk.calls} if any(o.secrets for o in found) else {}
    withheld += content.tally(found, names)
    for o in found:
        if o.text != o.seg.text:
            if read is not None:
                read.own(o.seg.path)
            set_at(body, o.seg.path, o.text)
    rewrite = any(not (w.asked and w.asked.approved) for w in withheld)
    if rewrite:  # findings a person approved leave as they are
        logger.debug(
            "withheld {} item(s): {}", len(withheld), ", ".join(sorted({w.rule for w in withheld}))
        )
    return Verdict(
        body=(read.dump() if read is not None else dump(body)) if rewrite else None,
        format=walk.format,
        model=walk.model or _model_in_path(req.path),
        project_root=root,
        withheld=tuple(withheld),
    )


def _content(
    walk: Walk,
    body: Any,
    done: set[str | None],
    index: DeniedIndex | None,
    secrets: SecretScreen | None,
    policy: Policy,
    approved: frozenset[str],
    items: ItemCache | None,
    conv: Conversation | None = None,
    read: Body | None = None,
    n: int = 0,
) -> tuple[list[Outcome], list[Outcome]]:
    """The outcomes of the walked strings, then of the strings no walker knows, in body
    order (`items`: what earlier requests' strings gave, reused where nothing changed;
    `conv`: the conversation's last turn, its frozen prefix's outcomes taken whole; the
    first n walked strings are the very ones it walked)."""
    extras: list[Outcome] = []
    if items is None:
        extra: list[Segment] = []
        if index or secrets:
            covered = {s.path for s in walk.segments}
            for _, strings in unit_strings(body, SHORTEST):
                extra += content.unknown(strings, covered, index, secrets)
        outcomes = content.screened(walk.segments, done, index, secrets, policy, approved)
        extras = content.screened(extra, done, index, secrets, policy, approved)
        return outcomes, extras
    kept = items.under(policy, index, secrets, approved)
    if index or secrets:
        if conv is not None:
            walked, changed = conv.walked(walk.segments, n)
        else:
            walked, changed = frozenset(s.path for s in walk.segments), None
        if conv is not None and read is not None and len(read.path) == 1:
            extras = _swept(kept, conv, body, read, walked, changed)
        else:
            for unit, strings in unit_strings(body, SHORTEST):
                extras += kept.unknown(unit, strings, walked)
    if conv is not None:
        return conv.screened(kept, walk.segments, done, n), extras
    kept.prefetch(walk.segments, done)
    return kept.screened(walk.segments, done), extras


def _swept(
    kept: Kept,
    conv: Conversation,
    body: Any,
    read: Body,
    covered: frozenset[JsonPath],
    changed: frozenset[JsonPath] | None,
) -> list[Outcome]:
    """The outcomes of the strings no walker knows, in body order; the conversation list's
    leading items' taken from its last turn where nothing they depend on changed."""
    key = read.path[0]
    as_read, owned = read.as_read(), read.owned
    k = conv.reusable(kept, key, as_read, covered, changed)
    lst = body[key]
    extras: list[Outcome] = []
    units: list[tuple[Outcome, ...]] = []
    framed = conv.frame_units(kept, read.frame, key, changed)
    if framed is not None:  # the frame's strings as the last turn found them
        entries: list[tuple[Unit, Strings] | None] = [None]
        # The items after the last turn's: new (not looked up in the walk memo either).
        entries += (
            ((key, j), item_strings(lst[j], (key, j), SHORTEST)) for j in range(k, len(lst))
        )
        before, after = framed
    else:
        entries = unit_strings_after(body, SHORTEST, key, k)
        before, after = [], []
    frame = before
    for entry in entries:
        if entry is None:  # the leading k items
            extras += before
            frame = after
            prefix, again = conv.units_before(k, owned)
            for j in again:  # edited now or last turn: swept again
                strings = list_item_strings(key, j, lst[j], SHORTEST)
                prefix[j] = kept.unknown((key, j), strings, covered)
            units += prefix
            extras.extend(chain.from_iterable(prefix))
            continue
        unit, strings = entry
        found = kept.unknown(unit, strings, covered)
        if len(unit) == 2 and unit[0] == key:
            units.append(found)
            extras += found
        elif framed is None:
            frame += found
    extras += after
    conv.keep_units(key, as_read, owned, units, covered)
    conv.keep_frame(read.frame, before, after)
    return extras


def _walked(
    fmt: Format,
    req: Outbound,
    body: dict[str, Any],
    policies: PolicyStore,
    screens: Screens | None,
) -> Verdict:
    return screen_object(fmt, req, body, policies, None, screens)


def _upload(policies: PolicyStore, screens: Screens | None) -> upload.Screeners:
    return upload.Screeners(
        lambda req, obj: screen_strings(req, obj, policies, screens),
        lambda fmt, req, obj: _walked(fmt, req, obj, policies, screens),
    )


def _syntax(exc: ValueError) -> str:
    """A parse error without the bytes it quotes (they are the client's, and may be secret)."""
    if isinstance(exc, UnicodeDecodeError):
        return f"not UTF-8 at byte {exc.start}"
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    return type(exc).__name__


def _model_in_path(path: str) -> str | None:
    """Gemini, Vertex and Bedrock name the model in the URL, not the body."""
    m = re.search(r"/models?/([^/:?]+)", path)
    return m.group(1) if m else None
