"""OpenAI replies for the fake model: Responses and Chat Completions, streamed (SSE) or whole."""

from __future__ import annotations

import json
import os
import time
from typing import Any

from agent_script import Call, Turn

Event = tuple[str | None, dict[str, Any]]  # (SSE event name or None, data)
_USAGE = {
    "input_tokens": 21,
    "output_tokens": 7,
    "total_tokens": 28,
    "input_tokens_details": {"cached_tokens": 3},
    "output_tokens_details": {"reasoning_tokens": 0},
}


def _item(turn: Turn, n: int) -> dict[str, Any]:
    if isinstance(turn, Call) and turn.custom is not None:
        return {
            "type": "custom_tool_call",
            "id": f"ctc_{n}_{os.urandom(3).hex()}",
            "call_id": turn.id,
            "name": turn.name,
            "input": turn.custom,
            "status": "completed",
        }
    if isinstance(turn, Call):
        return {
            "type": "function_call",
            "id": f"fc_{n}_{os.urandom(3).hex()}",
            "call_id": turn.id,
            "name": turn.name,
            "arguments": json.dumps(turn.args),
            "status": "completed",
        }
    return {
        "type": "message",
        "id": f"msg_{n}_{os.urandom(3).hex()}",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
    }


def response(turns: list[Turn], model: str) -> dict[str, Any]:
    return {
        "id": "resp_" + os.urandom(6).hex(),
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": [_item(t, n) for n, t in enumerate(turns)],
        "usage": _USAGE,
    }


def response_events(turns: list[Turn], model: str) -> list[Event]:
    """A Responses stream: created, each output item added/streamed/done, completed."""
    whole = response(turns, model)
    start = {**whole, "status": "in_progress", "output": [], "usage": None}
    out: list[Event] = [
        ("response.created", {"type": "response.created", "response": start}),
        ("response.in_progress", {"type": "response.in_progress", "response": start}),
    ]
    for n, item in enumerate(whole["output"]):
        ev = {"output_index": n, "item_id": item["id"]}
        if item["type"] == "custom_tool_call":
            out.append(
                (
                    "response.output_item.added",
                    {
                        "type": "response.output_item.added",
                        "output_index": n,
                        "item": {**item, "input": "", "status": "in_progress"},
                    },
                )
            )
            out.append(
                (
                    "response.custom_tool_call_input.delta",
                    {"type": "response.custom_tool_call_input.delta", **ev, "delta": item["input"]},
                )
            )
            out.append(
                (
                    "response.custom_tool_call_input.done",
                    {"type": "response.custom_tool_call_input.done", **ev, "input": item["input"]},
                )
            )
        elif item["type"] == "function_call":
            out.append(
                (
                    "response.output_item.added",
                    {
                        "type": "response.output_item.added",
                        "output_index": n,
                        "item": {**item, "arguments": "", "status": "in_progress"},
                    },
                )
            )
            out.append(
                (
                    "response.function_call_arguments.delta",
                    {
                        "type": "response.function_call_arguments.delta",
                        **ev,
                        "delta": item["arguments"],
                    },
                )
            )
            out.append(
                (
                    "response.function_call_arguments.done",
                    {
                        "type": "response.function_call_arguments.done",
                        **ev,
                        "arguments": item["arguments"],
                    },
                )
            )
        else:
            text = item["content"][0]["text"]
            part = {"type": "output_text", "text": "", "annotations": []}
            out.append(
                (
                    "response.output_item.added",
                    {
                        "type": "response.output_item.added",
                        "output_index": n,
                        "item": {**item, "status": "in_progress", "content": []},
                    },
                )
            )
            out.append(
                (
                    "response.content_part.added",
                    {"type": "response.content_part.added", **ev, "content_index": 0, "part": part},
                )
            )
            out.append(
                (
                    "response.output_text.delta",
                    {"type": "response.output_text.delta", **ev, "content_index": 0, "delta": text},
                )
            )
            out.append(
                (
                    "response.output_text.done",
                    {"type": "response.output_text.done", **ev, "content_index": 0, "text": text},
                )
            )
            out.append(
                (
                    "response.content_part.done",
                    {
                        "type": "response.content_part.done",
                        **ev,
                        "content_index": 0,
                        "part": {**part, "text": text},
                    },
                )
            )
        out.append(
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "output_index": n, "item": item},
            )
        )
    out.append(("response.completed", {"type": "response.completed", "response": whole}))
    return out


def _message(turns: list[Turn]) -> dict[str, Any]:
    calls = [
        {
            "id": t.id,
            "type": "function",
            "function": {"name": t.name, "arguments": json.dumps(t.args)},
        }
        for t in turns
        if isinstance(t, Call)
    ]
    text = "".join(t.text for t in turns if not isinstance(t, Call))
    msg: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        msg["tool_calls"] = calls
    return msg


def completion(turns: list[Turn], model: str) -> dict[str, Any]:
    msg = _message(turns)
    return {
        "id": "chatcmpl-" + os.urandom(6).hex(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": msg,
                "logprobs": None,
                "finish_reason": "tool_calls" if "tool_calls" in msg else "stop",
            }
        ],
        "usage": {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28},
    }


def completion_chunks(turns: list[Turn], model: str) -> list[Event]:
    """A Chat Completions stream: role, content or tool calls, finish reason, usage."""
    whole = completion(turns, model)
    head = {k: whole[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    msg = whole["choices"][0]["message"]

    def chunk(delta: dict[str, Any], finish: str | None = None) -> Event:
        return None, {
            **head,
            "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    if msg["content"]:
        out.append(chunk({"content": msg["content"]}))
    for i, call in enumerate(msg.get("tool_calls") or ()):
        out.append(chunk({"tool_calls": [{"index": i, **call}]}))
    out.append(chunk({}, whole["choices"][0]["finish_reason"]))
    out.append((None, {**head, "choices": [], "usage": whole["usage"]}))
    return out
