"""OpenAI Chat Completions (`/chat/completions`): body ⇄ segments."""

from __future__ import annotations

from functools import partial
from typing import Any

from gate.providers.history import Items, remembered
from gate.providers.paths import normalise
from gate.providers.segments import (
    JsonPath,
    Role,
    Segment,
    Walk,
    arguments,
    get_at,
    pair,
    replace_text,
    results_of,
    strings,
)

FORMAT = "openai-chat"
_ROLES = {
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "assistant": Role.ASSISTANT_TEXT,
    "tool": Role.TOOL_RESULT,
    "function": Role.TOOL_RESULT,
}


def matches(path: str) -> bool:
    return normalise(path).endswith("/chat/completions")


def walk(body: dict[str, Any]) -> Walk:
    tools = body.get("tools")
    head = remembered(
        (FORMAT, "tools"),
        tools,
        lambda: tuple(Segment(p, t, Role.SYSTEM) for p, t in strings(tools, ("tools",))),
    )
    segs = list(head)
    messages = body.get("messages") or ()
    if not isinstance(messages, list):
        messages = list(messages)  # walked as it iterates, to say which item is not a message
    # A conversation's next turn: the messages its last turn walked are taken up whole.
    walked = Items((FORMAT, "messages"), messages, (head,))
    for i in range(walked.start, len(messages)):
        msg = messages[i]
        if not isinstance(msg, dict):
            raise ValueError(f"messages[{i}] is not an object")
        at: JsonPath = ("messages", i)
        # Remembered (providers.history): a message resent unchanged is not walked again.
        m_segs, m_result = walked.remembered(
            (FORMAT, "message", i), msg, partial(_message, msg, at)
        )
        walked.add(m_segs, _calls(msg, i), () if m_result is None else ((m_result, at),))
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


def _message(msg: dict[str, Any], at: JsonPath) -> tuple[tuple[Segment, ...], str | None]:
    """One message's segments and the call it answers, if it is a result."""
    role = _ROLES.get(str(msg.get("role")), Role.USER_TEXT)
    call_id = None
    if role is Role.TOOL_RESULT:
        # Legacy `function` messages answer by name; modern `tool` ones by id.
        call_id = str(msg.get("tool_call_id") or f"function:{msg.get('name')}")
    segs = [Segment(p, t, role, call_id) for p, t in strings(msg.get("content"), (*at, "content"))]
    for j, call in enumerate(msg.get("tool_calls") or ()):
        if isinstance(call, dict):
            segs += (
                Segment(p, t, Role.TOOL_CALL, str(call.get("id")))
                for p, t in strings(call, (*at, "tool_calls", j))
            )
    if isinstance(fc := msg.get("function_call"), dict):  # legacy single call
        segs += (Segment(p, t, Role.TOOL_CALL) for p, t in strings(fc, (*at, "function_call")))
    return tuple(segs), call_id


def _calls(msg: dict[str, Any], i: int) -> tuple[tuple[str, str, Any], ...]:
    """_uses; inputs parsed from the arguments' text are new objects nothing edits, so an
    unchanged message's are reused. Any other input holds the body's own objects (which
    screening may edit in place): those are always taken from this body."""
    parsed, uses = remembered((FORMAT, "uses", i), msg, partial(_parsed_uses, msg))
    return uses if parsed else _uses(msg)


def _parsed_uses(msg: dict[str, Any]) -> tuple[bool, tuple[tuple[str, str, Any], ...]]:
    """Whether every input is parsed from the arguments' text, and then the uses."""
    calls = msg.get("tool_calls") or ()
    parsed = isinstance(calls, list) and all(
        isinstance(c, dict)
        and isinstance(fn := c.get("function"), dict)
        and isinstance(fn.get("arguments"), str)
        for c in calls
    )
    fc = msg.get("function_call")
    if parsed and (fc is None or (isinstance(fc, dict) and isinstance(fc.get("arguments"), str))):
        return True, _uses(msg)
    return False, ()


def _uses(msg: dict[str, Any]) -> tuple[tuple[str, str, Any], ...]:
    uses = []
    for call in msg.get("tool_calls") or ():
        if not isinstance(call, dict):
            continue
        call_id = str(call.get("id"))
        if isinstance(fn := call.get("function"), dict):
            uses.append((call_id, str(fn.get("name")), arguments(fn.get("arguments"))))
        elif isinstance(custom := call.get("custom"), dict):  # free-form input: apply_patch
            uses.append((call_id, str(custom.get("name")), {"input": custom.get("input")}))
    if isinstance(fc := msg.get("function_call"), dict):  # legacy single call
        uses.append(
            (f"function:{fc.get('name')}", str(fc.get("name")), arguments(fc.get("arguments")))
        )
    return tuple(uses)


def withhold_result(body: dict[str, Any], result: JsonPath, placeholder: str) -> None:
    msg = get_at(body, result)
    msg["content"] = replace_text(msg.get("content"), placeholder)


def error_body(message: str, status: int = 403) -> dict[str, Any]:
    return {
        "error": {"message": message, "type": "gate_error", "code": "gate_blocked", "param": None}
    }
