"""Screen one outbound request body: walk it, decide each tool call, withhold in place."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import orjson
from loguru import logger

from gate import providers
from gate.agents import tools
from gate.agents.actions import Action
from gate.providers import history
from gate.providers.segments import JsonPath, Role, ToolCall, Walk, get_at, long_strings
from gate.rules.layers import PolicyStore, repository_root
from gate.rules.model import Effect
from gate.screen import content, masking, placeholder
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import MIN_UNIT, IndexStore
from gate.screen.secrets import keyed_hash
from gate.screen.verdict import Asked, Blocked, Outbound, Verdict, Withheld

__all__ = ["Blocked", "Outbound", "Screens", "Verdict", "Withheld", "dump", "parse", "screen",
           "screen_object"]


# Where each format's tool result keeps its output (Anthropic, Chat, Responses, Gemini).
_OUTPUTS = ("content", "output", "response")
# Shorter strings hold neither a denied file's unit nor a secret any detector reports.
SHORTEST = min(MIN_UNIT, 8)


@dataclass(frozen=True, slots=True)
class Screens:
    """The content screens a gate runs besides tool rules (tests may run without them)."""

    indexes: IndexStore | None = None
    secrets: SecretScreen | None = None


def screen(req: Outbound, policies: PolicyStore, screens: Screens | None = None,
           known_for: Callable[[str], Mapping[str, tuple[str, Mapping[str, Any]]]] | None = None,
           ) -> Verdict:
    """Decide what leaves. Raises Blocked (or anything else) when it must not leave."""
    if not req.body.strip():
        return Verdict(None, None, None, req.project_root)
    try:
        body = parse(req.body)
    except (UnicodeDecodeError, ValueError) as exc:
        if req.unsafe_pass_non_json:
            logger.warning("forwarding a non-JSON body unscreened (upstream opted out)")
            return Verdict(None, "unscreened", None, req.project_root)
        # Fail closed: a body gate cannot parse is a body gate cannot screen.
        raise Blocked(f"gate cannot screen this request: the body is not JSON ({exc})") from exc
    fmt = providers.detect(req.path)
    if fmt is None:
        return screen_strings(req, body, policies, screens)
    if not isinstance(body, dict):
        raise Blocked(f"gate cannot screen this request: a {fmt.FORMAT} body must be an object")
    known = None
    if known_for is not None and isinstance(prev := body.get("previous_response_id"), str):
        known = known_for(prev)  # calls a stored response made: its outputs pair with them
    return screen_object(fmt, req, body, policies, known, screens)


def screen_strings(req: Outbound, body: Any, policies: PolicyStore,
                   screens: Screens | None = None) -> Verdict:
    """A body in no format gate knows: every string is still screened for denied content and
    secrets; nothing is paired, so no tool rule applies."""
    with history.one_request():
        return _decide(Walk("unknown", None, (), ()), None, req, body, policies, screens)


def screen_object(fmt: ModuleType, req: Outbound, body: dict[str, Any], policies: PolicyStore,
                  known: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
                  screens: Screens | None = None) -> Verdict:
    """Screen an already parsed body in place (a WebSocket frame's payload, say).

    `known` holds calls seen earlier on the same connection (id → name, input): a result
    that answers one of them is decided like a result paired in the body itself.
    """
    with history.one_request():
        try:
            walk = fmt.walk(body)
        except ValueError as exc:
            raise Blocked(f"gate cannot screen this request: {exc}") from exc
        if known and walk.orphans:
            extra = tuple(ToolCall(i, known[i][0], known[i][1], path)
                          for i, path in walk.orphans if i in known)
            walk = replace(walk, calls=walk.calls + extra)
        return _decide(walk, fmt, req, body, policies, screens)


def _decide(walk: Walk, fmt: ModuleType | None, req: Outbound, body: Any,
            policies: PolicyStore, screens: Screens | None) -> Verdict:
    cwd = req.project_root or tools.working_directory(_prompt_texts(walk))
    root = repository_root(cwd) if cwd else None
    policy = policies.policy_for(root)
    withheld: list[Withheld] = []
    for call in walk.calls:
        if call.result is None:
            continue
        action = tools.action(call.name, call.input, cwd)
        decision = policy.decide(action, root)
        if decision.rule is None or decision.effect not in (Effect.DENY, Effect.ASK):
            continue
        assert fmt is not None
        item = Withheld(call.id, call.name, decision.path or action.target,
                        decision.rule.text, decision.rule.where)
        if decision.effect is Effect.ASK:
            item = replace(item, asked=_asked(get_at(body, call.result), action, decision.path,
                                              req.approved, screens))
            if item.asked and item.asked.approved:
                withheld.append(item)  # sent as is, and still screened for content below
                continue
        holders = [get_at(body, call.result[:k]) for k in range(len(call.result))]
        fmt.withhold_result(body, call.result, placeholder.withheld(action, decision.rule,
                                                                    decision.path))
        history.edited(holders)  # each object holding the result now serialises otherwise
        withheld.append(item)
    done = {w.call_id for w in withheld if not (w.asked and w.asked.approved)}
    changed: set[JsonPath] = set()
    index = screens.indexes.index_for(policy, root) if screens and screens.indexes else None
    if screens and (index or screens.secrets):
        # Fail closed: strings the format walker does not know (new fields, unknown blocks)
        # are screened as attachments, and object keys are checked too.
        found, names = long_strings(body, SHORTEST)
        covered = {s.path for s in walk.segments}
        extra = content.suspects([(p, t) for p, t in found if p not in covered], index,
                                 screens.secrets)
        walk = replace(walk, segments=walk.segments + extra)
        content.keys(names, index, screens.secrets)
    if index is not None:
        withheld += content.denied_values(walk, body, index, done, changed)
    if screens and screens.secrets:
        withheld += content.secrets(walk, body, screens.secrets, policy, done, changed,
                                    req.approved)
    out = None
    if any(not (w.asked and w.asked.approved) for w in withheld):  # approved ones: as is
        logger.info("withheld {} item(s): {}", len(withheld),
                    ", ".join(sorted({w.rule for w in withheld})))
        out = dump(body)
    model = walk.model or _model_in_path(req.path)
    return Verdict(out, walk.format, model, root, tuple(withheld))


def _asked(result: Any, action: Action, path: str | None, approved: frozenset[str],
           screens: Screens | None) -> Asked:
    """An ask rule's tool result, as a person is shown it; keyed by its content (not its
    call id), so the same output read again later is recognised."""
    if isinstance(result, dict):
        result = next((result[k] for k in _OUTPUTS if k in result), result)
    text = "\n".join(t for _, t in sorted(long_strings(result, 1)[0])) or dump(result).decode()
    key = keyed_hash(text, screens.secrets.key if screens and screens.secrets else b"")
    return Asked(key, "send-denied-content", masking.preview(text), action.describe(path),
                 key in approved)


def _model_in_path(path: str) -> str | None:
    """Gemini, Vertex and Bedrock name the model in the URL, not the body."""
    m = re.search(r"/models?/([^/:?]+)", path)
    return m.group(1) if m else None


def _prompt_texts(walk: Walk) -> list[str]:
    """Where agents state their working directory: system text and the first user texts."""
    users = [t for _, t in zip(range(3), walk.texts(Role.USER_TEXT), strict=False)]
    return [*walk.texts(Role.SYSTEM), *users]


def parse(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # orjson refuses what the JSON spec allows but it does not (lone \u-escaped
        # surrogates, integers beyond 64 bits); the standard parser decides.
        return json.loads(raw)


def dump(body: Any) -> bytes:
    """Serialize a rewritten body compactly (UTF-8, no spaces), as SDKs and agents send it."""
    try:
        return orjson.dumps(body)
    except (orjson.JSONEncodeError, TypeError):  # a lone surrogate stays \u-escaped
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode()
