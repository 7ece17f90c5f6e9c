"""OpenAI Assistants (`/assistants`, `/threads`, thread messages, runs, `submit_tool_outputs`).

The conversation lives on the server; a request carries new messages (a thread's
`messages`, a run's `additional_messages`, one message posted to a thread), instructions
and tools, or the outputs of the tool calls a run asked for. Those outputs answer calls
this body does not hold: they are results whose call gate may not know.
"""

from __future__ import annotations

import re
from typing import Any

from gate.providers import openai_chat
from gate.providers.paths import normalise
from gate.providers.segments import JsonPath, Role, Segment, Walk, get_at, strings

FORMAT = "openai-assistants"
_PATHS = re.compile(
    r"/(assistants(/[^/]+)?|threads(/runs|/[^/]+(/messages(/[^/]+)?"
    r"|/runs(/[^/]+(/submit_tool_outputs)?)?))?)$"
)
_SYSTEM = ("instructions", "additional_instructions", "description", "tools")
_ROLES = {"assistant": Role.ASSISTANT_TEXT}


_SUBMIT = re.compile(r"/threads/([^/]+)/runs/([^/]+)/submit_tool_outputs$")


def matches(path: str) -> bool:
    return bool(_PATHS.search(normalise(path)))


def runs(path: str) -> bool:
    """Whether a reply to this path may hold a run (whose `required_action` names the
    calls a later `submit_tool_outputs` answers)."""
    return "/threads" in normalise(path)


def run_key(thread_id: str, run_id: str) -> str:
    """Where a run's calls are kept among the Responses chains: never a Responses id (those
    are the client's to name, and hold no NUL), and per thread and run, so a call id reused
    in another thread or run is not paired with this run's call."""
    # Lower case on both sides: formats read request paths lower-cased (paths.normalise).
    return f"\x00run:{thread_id.lower()}/{run_id.lower()}"


def submitted_to(path: str) -> tuple[str, str] | None:
    """The thread and run a `submit_tool_outputs` request answers."""
    m = _SUBMIT.search(normalise(path))
    return (m.group(1), m.group(2)) if m else None


def walk(body: dict[str, Any]) -> Walk:
    segs: list[Segment] = []
    for key in _SYSTEM:
        segs += (Segment(p, t, Role.SYSTEM) for p, t in strings(body.get(key), (key,)))
    if "role" in body and "content" in body:  # a message posted to a thread
        segs += _message(body, ())
    thread = body.get("thread")
    lists: list[tuple[JsonPath, Any]] = [
        (("messages",), body.get("messages")),
        (("additional_messages",), body.get("additional_messages")),
    ]
    if isinstance(thread, dict):
        lists.append((("thread", "messages"), thread.get("messages")))
    for at, msgs in lists:
        if msgs is None:
            continue
        if not isinstance(msgs, list):
            raise ValueError(f"{'.'.join(map(str, at))} is not a list")
        for i, msg in enumerate(msgs):
            if not isinstance(msg, dict):
                raise ValueError(f"{'.'.join(map(str, at))}[{i}] is not an object")
            segs += _message(msg, (*at, i))
    orphans = []
    outputs = body.get("tool_outputs")
    for i, out in enumerate(outputs if isinstance(outputs, list) else ()):
        if not isinstance(out, dict):
            raise ValueError(f"tool_outputs[{i}] is not an object")
        call_id = str(out.get("tool_call_id"))
        orphans.append((call_id, ("tool_outputs", i)))
        segs += (
            Segment(p, t, Role.TOOL_RESULT, call_id)
            for p, t in strings(out.get("output"), ("tool_outputs", i, "output"))
        )
    model = body.get("model")
    return Walk(
        format=FORMAT,
        model=model if isinstance(model, str) else None,
        segments=tuple(segs),
        calls=(),
        orphans=tuple(orphans),
    )


def _message(msg: dict[str, Any], at: JsonPath) -> list[Segment]:
    role = _ROLES.get(str(msg.get("role")), Role.USER_TEXT)
    return [Segment(p, t, role) for p, t in strings(msg.get("content"), (*at, "content"))]


def withhold_result(body: dict[str, Any], result: JsonPath, placeholder: str) -> None:
    get_at(body, result)["output"] = placeholder


error_body = openai_chat.error_body
