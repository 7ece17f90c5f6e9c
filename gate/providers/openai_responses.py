"""OpenAI Responses (`/responses`, `/responses/compact`): body ⇄ segments.

With `previous_response_id` or `conversation`, earlier items live on the server and a body
carries only new ones: each tool output must be screened the first time it is sent, and
an output may answer a call this body does not hold.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from gate.providers import openai_chat
from gate.providers.history import Items, remembered
from gate.providers.paths import normalise
from gate.providers.segments import (
    JsonPath,
    Role,
    Segment,
    Walk,
    arguments,
    get_at,
    orphans,
    pair,
    replace_text,
    results_of,
    strings,
)

FORMAT = "openai-responses"
_ROLES = {"system": Role.SYSTEM, "developer": Role.SYSTEM, "assistant": Role.ASSISTANT_TEXT}
_OUTPUTS = frozenset(
    {
        "function_call_output",
        "custom_tool_call_output",
        "local_shell_call_output",
        "shell_call_output",
        "apply_patch_call_output",
        "computer_call_output",
        "mcp_call_output",
    }
)
# Opaque to us and signed or encrypted for the provider: never edited.
_OPAQUE_KEYS = frozenset({"encrypted_content", "signature"})
_OPAQUE_ITEMS = frozenset({"reasoning", "compaction", "item_reference"})


def matches(path: str) -> bool:
    return normalise(path).endswith(("/responses", "/responses/compact"))


def walk(body: dict[str, Any]) -> Walk:
    outer = _walk(body, ())
    inner = body.get("response")
    if not isinstance(inner, dict):
        return outer
    # A request wrapped as `{"type": "response.create", "response": {...}}` (a WebSocket
    # frame may be): what the provider may read there is walked as a request too.
    wrapped = _walk(inner, ("response",))
    return Walk(
        format=FORMAT,
        model=outer.model or wrapped.model,
        segments=outer.segments + wrapped.segments,
        calls=outer.calls + wrapped.calls,
        orphans=outer.orphans + wrapped.orphans,
        shared=outer.shared,
    )


def _walk(body: dict[str, Any], at: JsonPath) -> Walk:
    head: list[tuple[Segment, ...]] = []  # the segments before the items', in parts
    if isinstance(said := body.get("instructions"), str):
        # Remembered: the same Segment object each turn, so a conversation's strings start
        # with the very objects of its last turn (gate/screen/prefix.py).
        head.append(
            remembered(
                (FORMAT, *at, "instructions"),
                said,
                lambda: (Segment((*at, "instructions"), said, Role.SYSTEM),),
            )
        )
    tools = body.get("tools")
    head.append(
        remembered(
            (FORMAT, *at, "tools"),
            tools,
            lambda: tuple(Segment(p, t, Role.SYSTEM) for p, t in strings(tools, (*at, "tools"))),
        )
    )
    items = body.get("input")
    if isinstance(items, str):
        head.append((Segment((*at, "input"), items, Role.USER_TEXT),))
        items = []
    items = items or ()
    if not isinstance(items, list):
        items = list(items)  # walked as it iterates, to say which item is not an object
    # A conversation's next turn: the items its last turn walked are taken up whole.
    walked = Items((FORMAT, *at, "input"), items, tuple(head))
    for i in range(walked.start, len(items)):
        item = items[i]
        if not isinstance(item, dict):
            raise ValueError(f"{'.'.join(map(str, (*at, 'input')))}[{i}] is not an object")
        # Remembered (providers.history): an item resent unchanged is not walked again.
        i_segs, i_results = walked.remembered(
            (FORMAT, *at, "item", i), item, partial(_item, item, (*at, "input", i))
        )
        call = _call(item, i, at)
        walked.add(i_segs, () if call is None else (call,), i_results)
    segs = [seg for part in head for seg in part]
    segs += walked.segs
    stateful = bool(body.get("previous_response_id") or body.get("conversation"))
    results = results_of(walked)
    calls = pair(walked.uses, results, orphans_allowed=stateful, made=walked.calls)
    walked.keep(items, calls)
    model = body.get("model")
    return Walk(
        format=FORMAT,
        model=model if isinstance(model, str) else None,
        segments=tuple(segs),
        calls=calls,
        orphans=orphans(walked.uses, results),
        shared=walked.shared,
    )


def _item(
    item: dict[str, Any], at: JsonPath
) -> tuple[tuple[Segment, ...], tuple[tuple[str, JsonPath], ...]]:
    """One input item's segments and the result it holds, if any (immutable values only)."""
    kind = item.get("type", "message")
    call_id = str(item.get("call_id") or item.get("id"))
    if kind == "additional_tools":  # Codex code mode: tool definitions sent as an item
        return tuple(Segment(p, t, Role.SYSTEM) for p, t in strings(item, at)), ()
    if kind == "message":
        role = _ROLES.get(str(item.get("role")), Role.USER_TEXT)
        return tuple(
            Segment(p, t, role) for p, t in strings(item.get("content"), (*at, "content"))
        ), ()
    if kind in _OUTPUTS:
        return tuple(
            Segment(p, t, Role.TOOL_RESULT, call_id)
            for p, t in strings(item.get("output"), (*at, "output"))
        ), ((call_id, at),)
    role = Role.IMMUTABLE if kind in _OPAQUE_ITEMS else Role.TOOL_CALL
    segs = []
    for p, t in strings(item, at):
        opaque = role is Role.IMMUTABLE or p[-1] in _OPAQUE_KEYS
        segs.append(Segment(p, t, Role.IMMUTABLE if opaque else role, call_id))
    return tuple(segs), ()


def _call(item: dict[str, Any], i: int, at: JsonPath) -> tuple[str, str, dict[str, Any]] | None:
    """call_of; a function call's input parsed from its arguments' text is a new object
    nothing edits, so an unchanged item's is reused. Any other input holds the body's own
    objects (which screening may edit in place): it is always taken from this body."""
    if item.get("type") == "function_call" and isinstance(item.get("arguments"), str):
        return remembered((FORMAT, *at, "call", i), item, partial(call_of, item))
    return call_of(item)


def call_of(item: Any) -> tuple[str, str, dict[str, Any]] | None:
    """A call item (in a request's input, or in a response's output) as (id, name, input)."""
    if not isinstance(item, dict):
        return None
    kind = item.get("type")
    call_id = str(item.get("call_id") or item.get("id"))
    if kind == "function_call":
        return call_id, str(item.get("name")), arguments(item.get("arguments"))
    if kind == "custom_tool_call":  # free-form input, e.g. Codex's apply_patch
        return call_id, str(item.get("name")), {"input": item.get("input")}
    if kind == "local_shell_call":
        action = item.get("action") or {}
        return (
            call_id,
            "local_shell",
            {"command": action.get("command"), "workdir": action.get("working_directory")},
        )
    if kind == "shell_call":
        commands = (item.get("action") or {}).get("commands") or []
        return call_id, "shell", {"command": "\n".join(map(str, commands))}
    if kind == "apply_patch_call":
        op = item.get("operation") or {}
        return call_id, "apply_patch", {"path": op.get("path")}
    return None


def withhold_result(body: dict[str, Any], result: JsonPath, placeholder: str) -> None:
    item = get_at(body, result)
    item["output"] = replace_text(item.get("output"), placeholder)


# The same error shape as Chat Completions: both are OpenAI's.
error_body = openai_chat.error_body
