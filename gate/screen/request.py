"""Screen one outbound request body: walk it, decide each tool call, withhold in place."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import ModuleType
from typing import Any

import orjson
from loguru import logger

from gate import providers
from gate.agents import tools
from gate.providers.segments import Role, Segment, ToolCall, Walk, set_at, strings
from gate.rules.layers import PolicyStore, repository_root
from gate.rules.model import Effect
from gate.screen import placeholder
from gate.screen.fingerprints import DeniedIndex, IndexStore


class Blocked(Exception):
    """The request must not leave; the message tells the user why and what to do."""


@dataclass(frozen=True, slots=True)
class Outbound:
    path: str                 # the upstream path, query included
    body: bytes               # decoded (no content-encoding)
    agent: str | None         # from the run, or guessed from headers
    project_root: str | None  # from the run, if any
    unsafe_pass_non_json: bool = False  # the upstream's opt-out (config), never the default


@dataclass(frozen=True, slots=True)
class Withheld:
    call_id: str | None
    tool: str | None
    target: str | None
    rule: str
    where: str
    kind: str = "tool-result"  # or "content": a denied file's value found in a string
    count: int = 1

    def record(self) -> dict[str, object]:
        """As written to the audit: where and why, never the content."""
        return {"kind": self.kind, "call_id": self.call_id, "tool": self.tool,
                "target": self.target, "rule": self.rule, "where": self.where,
                "count": self.count}


@dataclass(frozen=True, slots=True)
class Verdict:
    body: bytes | None        # None: forward the original bytes untouched
    format: str | None
    model: str | None
    project_root: str | None
    withheld: tuple[Withheld, ...] = ()
    segments: int = 0


def screen(req: Outbound, policies: PolicyStore, indexes: IndexStore | None = None) -> Verdict:
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
        # Not a format gate knows: every string is still screened for denied content;
        # nothing is paired, so no tool rule applies.
        segs = tuple(Segment(p, t, Role.ATTACHMENT) for p, t in strings(body, ()))
        return _decide(Walk("unknown", None, segs, ()), None, req, body, policies, indexes)
    if not isinstance(body, dict):
        raise Blocked(f"gate cannot screen this request: a {fmt.FORMAT} body must be an object")
    return screen_object(fmt, req, body, policies, indexes=indexes)


def screen_object(fmt: ModuleType, req: Outbound, body: dict[str, Any], policies: PolicyStore,
                  known: Mapping[str, tuple[str, Mapping[str, Any]]] | None = None,
                  indexes: IndexStore | None = None) -> Verdict:
    """Screen an already parsed body in place (a WebSocket frame's payload, say).

    `known` holds calls seen earlier on the same connection (id → name, input): a result
    that answers one of them is decided like a result paired in the body itself.
    """
    try:
        walk = fmt.walk(body)
    except ValueError as exc:
        raise Blocked(f"gate cannot screen this request: {exc}") from exc
    if known and walk.orphans:
        extra = tuple(ToolCall(i, known[i][0], known[i][1], path)
                      for i, path in walk.orphans if i in known)
        walk = replace(walk, calls=walk.calls + extra)
    return _decide(walk, fmt, req, body, policies, indexes)


def _decide(walk: Walk, fmt: ModuleType | None, req: Outbound, body: Any,
            policies: PolicyStore, indexes: IndexStore | None) -> Verdict:
    cwd = req.project_root or tools.working_directory(_prompt_texts(walk))
    root = repository_root(cwd) if cwd else None
    policy = policies.policy_for(root)
    withheld: list[Withheld] = []
    for call in walk.calls:
        if call.result is None:
            continue
        action = tools.action(call.name, call.input, cwd)
        decision = policy.decide(action, root)
        # Until asking a person exists, an ask rule withholds like a deny (fail closed).
        if decision.rule is None or decision.effect not in (Effect.DENY, Effect.ASK):
            continue
        text = placeholder.withheld(action, decision.rule, decision.path)
        assert fmt is not None
        fmt.withhold_result(body, call.result, text)
        withheld.append(Withheld(call.id, call.name, decision.path or action.target,
                                 decision.rule.text, decision.rule.where))
    if indexes is not None:
        withheld += _denied_content(walk, body, indexes.index_for(policy, root),
                                    {w.call_id for w in withheld})
    out = None
    if withheld:
        logger.info("withheld {} item(s): {}", len(withheld),
                    ", ".join(sorted({w.rule for w in withheld})))
        out = dump(body)
    model = walk.model or _model_in_path(req.path)
    return Verdict(out, walk.format, model, root, tuple(withheld), len(walk.segments))


def _model_in_path(path: str) -> str | None:
    """Gemini, Vertex and Bedrock name the model in the URL, not the body."""
    m = re.search(r"/models?/([^/:?]+)", path)
    return m.group(1) if m else None


def _denied_content(walk: Walk, body: Any, index: DeniedIndex,
                    done: set[str | None]) -> list[Withheld]:
    """Replace every denied file's value wherever it appears, whatever carried it."""
    if not len(index):
        return []
    found: dict[tuple[str, str], Withheld] = {}
    for seg in walk.segments:
        if seg.role is Role.TOOL_RESULT and seg.call_id in done:
            continue  # already withheld whole
        new, hits = index.redact(seg.text)
        if not hits:
            continue
        first = hits[0].source
        if seg.role is Role.IMMUTABLE:
            # Fail closed: a signed or opaque field cannot be edited, so it cannot leave.
            raise Blocked(f"a value from {first.path} (denied by {first.rule.text},"
                          f" {first.rule.where}) is inside a signed or opaque field that gate"
                          " cannot edit; start a new conversation without it")
        set_at(body, seg.path, new)
        for hit in hits:
            key = (hit.source.path, hit.source.rule.text)
            prev = found.get(key)
            found[key] = Withheld(None, None, hit.source.path, hit.source.rule.text,
                                  hit.source.rule.where, "content",
                                  prev.count + 1 if prev else 1)
    return list(found.values())


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
