"""Anthropic Messages (`/v1/messages`, `/v1/messages/count_tokens`): body ⇄ segments."""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from gate.providers.history import Items, remembered
from gate.providers.paths import normalise
from gate.providers.segments import (
    JsonPath,
    Role,
    Segment,
    Walk,
    get_at,
    pair,
    results_of,
    strings,
)

FORMAT = "anthropic"
PATHS = ("/v1/messages", "/v1/messages/count_tokens")
# Claude Code's first system block; api.anthropic.com strips it only when it arrives unchanged.
BILLING_PREFIX = "x-anthropic-billing-header"
# Blocks whose content is signed or encrypted: passed back byte-identical or the API rejects them.
_IMMUTABLE_BLOCKS = frozenset({"thinking", "redacted_thinking"})
_OPAQUE_KEYS = frozenset({"signature", "encrypted_content", "encrypted_index", "encrypted_stdout"})
_ROLES = {"assistant": Role.ASSISTANT_TEXT, "system": Role.SYSTEM}


# Bedrock (`/model/{id}/invoke`, `/invoke-with-response-stream`) and Vertex
# (`.../publishers/anthropic/models/{m}:rawPredict`, `:streamRawPredict`,
# `count-tokens:rawPredict`) carry the same body under other URLs.
_CLOUD = re.compile(
    r"(/model/[^/]+/invoke(-with-response-stream)?"
    r"|/publishers/anthropic/models/[^/]+:(stream)?rawpredict)$"
)


def matches(path: str) -> bool:
    """Whether a request path is a Messages endpoint, however it is spelled."""
    norm = normalise(path)
    return norm.endswith(PATHS) or bool(_CLOUD.search(norm))


def walk(body: dict[str, Any]) -> Walk:
    """Segments and paired tool calls of a Messages request body.

    Each message's walk is remembered (providers.history): a message resent unchanged costs
    its serialisation, not a walk. Tool inputs are always taken from this body.
    """
    system, tools = body.get("system"), body.get("tools")
    head = (
        remembered((FORMAT, "system"), system, lambda: _system(system)),
        remembered(
            (FORMAT, "tools"),
            tools,
            lambda: tuple(Segment(p, t, Role.SYSTEM) for p, t in strings(tools, ("tools",))),
        ),
    )
    segs = [*head[0], *head[1]]
    messages = body.get("messages") or ()
    if not isinstance(messages, list):
        messages = list(messages)  # walked as it iterates, to say which item is not a message
    # A conversation's next turn: the messages its last turn walked are taken up whole.
    walked = Items((FORMAT, "messages"), messages, head)
    for i in range(walked.start, len(messages)):
        msg = messages[i]
        if not isinstance(msg, dict):
            raise ValueError(f"messages[{i}] is not an object")
        m_segs, m_uses, m_results = walked.remembered(
            (FORMAT, "message", i), msg, partial(walk_message, msg, ("messages", i))
        )
        content: Any = msg.get("content")
        walked.add(
            m_segs, [(id_, name, content[j].get("input")) for id_, name, j in m_uses], m_results
        )
    calls = pair(walked.uses, results_of(walked), made=walked.calls)
    walked.keep(messages, calls)
    segs += walked.segs
    model = body.get("model")
    return Walk(
        format=FORMAT,
        model=model if isinstance(model, str) else None,
        segments=tuple(segs),
        calls=calls,
        shared=walked.shared,
    )


def _system(system: Any) -> tuple[Segment, ...]:
    if isinstance(system, str):
        return (Segment(("system",), system, Role.SYSTEM),)
    segs = []
    for i, block in enumerate(system or ()):
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str):
            immutable = i == 0 and text.startswith(BILLING_PREFIX)
            segs.append(
                Segment(("system", i, "text"), text, Role.IMMUTABLE if immutable else Role.SYSTEM)
            )
    return tuple(segs)


# One message's segments, its tool calls (id, name, index of the block) and the results it
# holds (call id, where): immutable, so a resent message can reuse them.
Message = tuple[
    tuple[Segment, ...], tuple[tuple[str, str, int], ...], tuple[tuple[str, JsonPath], ...]
]


def walk_message(msg: dict[str, Any], at: JsonPath) -> Message:
    """One message's segments, the tool calls it makes and the results it holds."""
    role = _ROLES.get(str(msg.get("role")), Role.USER_TEXT)
    content = msg.get("content")
    if isinstance(content, str):
        return (Segment((*at, "content"), content, role),), (), ()
    segs: list[Segment] = []
    uses: list[tuple[str, str, int]] = []
    results: list[tuple[str, JsonPath]] = []
    for j, block in enumerate(content or ()):
        bat: JsonPath = (*at, "content", j)
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            segs.append(Segment((*bat, "text"), str(block.get("text", "")), role))
        elif kind == "tool_use":
            uses.append((str(block.get("id")), str(block.get("name")), j))
            segs.extend(
                Segment(p, t, Role.TOOL_CALL, str(block.get("id")))
                for p, t in strings(block.get("input"), (*bat, "input"))
            )
        elif kind == "tool_result":
            call_id = str(block.get("tool_use_id"))
            results.append((call_id, bat))
            segs.extend(
                Segment(p, t, Role.TOOL_RESULT, call_id)
                for p, t in _content_strings(block.get("content"), (*bat, "content"))
            )
        elif kind in _IMMUTABLE_BLOCKS:
            segs.extend(Segment(p, t, Role.IMMUTABLE) for p, t in strings(block, bat))
        else:
            # image, document, search_result, server tools and block types we do not know yet:
            # every string is screened; opaque fields are marked immutable.
            for p, t in strings(block, bat):
                opaque = p[-1] in _OPAQUE_KEYS
                segs.append(Segment(p, t, Role.IMMUTABLE if opaque else Role.ATTACHMENT))
    return tuple(segs), tuple(uses), tuple(results)


def _content_strings(content: Any, at: JsonPath) -> list[tuple[JsonPath, str]]:
    if isinstance(content, str):
        return [(at, content)]
    out: list[tuple[JsonPath, str]] = []
    for k, part in enumerate(content or ()):
        if isinstance(part, dict) and part.get("type") == "text":
            out.append(((*at, k, "text"), str(part.get("text", ""))))
        else:
            out.extend(strings(part, (*at, k)))
    return out


def withhold_result(body: dict[str, Any], result: JsonPath, placeholder: str) -> None:
    """Replace a tool_result's content in place; keep its id, position and cache_control."""
    block = get_at(body, result)
    content = block.get("content")
    if not isinstance(content, list):
        block["content"] = placeholder
        return
    for k, part in enumerate(content):
        if isinstance(part, dict) and part.get("type") == "text":
            part["text"] = placeholder
        else:
            # An image or document of a denied file becomes a text part at the same index.
            new: dict[str, Any] = {"type": "text", "text": placeholder}
            if isinstance(part, dict) and "cache_control" in part:
                new["cache_control"] = part["cache_control"]
            content[k] = new
    if not content:
        block["content"] = placeholder


def error_body(message: str, status: int = 403) -> dict[str, Any]:
    """An Anthropic-shaped error, so SDKs and agents show gate's message."""
    return {"type": "error", "error": {"type": "gate_error", "message": message}}
