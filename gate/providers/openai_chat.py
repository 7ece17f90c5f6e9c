"""OpenAI Chat Completions (`/chat/completions`): body ⇄ segments."""

from __future__ import annotations

from typing import Any

from gate.providers.paths import normalise
from gate.providers.segments import (
    JsonPath,
    Role,
    Segment,
    Walk,
    add_result,
    arguments,
    get_at,
    pair,
    replace_text,
    strings,
)

FORMAT = "openai-chat"
_ROLES = {"system": Role.SYSTEM, "developer": Role.SYSTEM, "assistant": Role.ASSISTANT_TEXT,
          "tool": Role.TOOL_RESULT, "function": Role.TOOL_RESULT}


def matches(path: str) -> bool:
    return normalise(path).endswith("/chat/completions")


def walk(body: dict[str, Any]) -> Walk:
    segs: list[Segment] = []
    segs.extend(Segment(p, t, Role.SYSTEM) for p, t in strings(body.get("tools"), ("tools",)))
    uses: list[tuple[str, str, Any]] = []
    results: dict[str, JsonPath] = {}
    for i, msg in enumerate(body.get("messages") or ()):
        if not isinstance(msg, dict):
            raise ValueError(f"messages[{i}] is not an object")
        at: JsonPath = ("messages", i)
        role = _ROLES.get(str(msg.get("role")), Role.USER_TEXT)
        call_id = None
        if role is Role.TOOL_RESULT:
            # Legacy `function` messages answer by name; modern `tool` ones by id.
            call_id = str(msg.get("tool_call_id") or f"function:{msg.get('name')}")
            add_result(results, call_id, at)
        segs.extend(Segment(p, t, role, call_id)
                    for p, t in strings(msg.get("content"), (*at, "content")))
        for j, call in enumerate(msg.get("tool_calls") or ()):
            _call(call, (*at, "tool_calls", j), segs, uses)
        if isinstance(fc := msg.get("function_call"), dict):  # legacy single call
            uses.append((f"function:{fc.get('name')}", str(fc.get("name")),
                         arguments(fc.get("arguments"))))
            segs.extend(Segment(p, t, Role.TOOL_CALL)
                        for p, t in strings(fc, (*at, "function_call")))
    model = body.get("model")
    return Walk(FORMAT, model if isinstance(model, str) else None, tuple(segs),
                pair(uses, results))


def _call(call: Any, at: JsonPath, segs: list[Segment], uses: list[tuple[str, str, Any]]) -> None:
    if not isinstance(call, dict):
        return
    call_id = str(call.get("id"))
    if isinstance(fn := call.get("function"), dict):
        uses.append((call_id, str(fn.get("name")), arguments(fn.get("arguments"))))
    elif isinstance(custom := call.get("custom"), dict):  # free-form input, e.g. apply_patch
        uses.append((call_id, str(custom.get("name")), {"input": custom.get("input")}))
    segs.extend(Segment(p, t, Role.TOOL_CALL, call_id) for p, t in strings(call, at))


def withhold_result(body: dict[str, Any], result: JsonPath, placeholder: str) -> None:
    msg = get_at(body, result)
    msg["content"] = replace_text(msg.get("content"), placeholder)


def error_body(message: str, status: int = 403) -> dict[str, Any]:
    return {"error": {"message": message, "type": "gate_error", "code": "gate_blocked",
                      "param": None}}
