"""The benchmark's Claude Code session in the other wire formats gate screens: OpenAI Chat
Completions, OpenAI Responses and Gemini generateContent, with each format's route through
gate and a reply of that format from the upstream."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

FORMATS = ("anthropic", "chat", "responses", "gemini")


@dataclass(frozen=True)
class Format:
    name: str
    path: str  # upstream path (direct and plain mitmproxy)
    gate_path: str  # the same through gate's reverse route
    reply: bytes


_GEMINI = "/v1beta/models/gemini-2.5-pro:generateContent"
_REPLIES = {
    "anthropic": {
        "id": "msg_bench",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 21,
            "output_tokens": 7,
            "cache_read_input_tokens": 3,
            "cache_creation_input_tokens": 0,
        },
    },
    "chat": {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": 1764547200,
        "model": "gpt-5",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "Done."},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 21, "completion_tokens": 7, "total_tokens": 28},
    },
    "responses": {
        "id": "resp_bench",
        "object": "response",
        "created_at": 1764547200,
        "status": "completed",
        "model": "gpt-5",
        "output": [
            {
                "type": "message",
                "id": "msg_bench",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
            }
        ],
        "usage": {"input_tokens": 21, "output_tokens": 7, "total_tokens": 28},
    },
    "gemini": {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"text": "Done."}]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": {
            "promptTokenCount": 21,
            "candidatesTokenCount": 7,
            "totalTokenCount": 28,
        },
        "modelVersion": "gemini-2.5-pro",
    },
}
FORMAT = {
    "anthropic": Format("anthropic", "/v1/messages", "/anthropic/v1/messages", b""),
    "chat": Format("chat", "/v1/chat/completions", "/openai/v1/chat/completions", b""),
    "responses": Format("responses", "/v1/responses", "/openai/v1/responses", b""),
    "gemini": Format("gemini", _GEMINI, "/gemini" + _GEMINI, b""),
}
FORMAT = {
    k: Format(f.name, f.path, f.gate_path, json.dumps(_REPLIES[k]).encode())
    for k, f in FORMAT.items()
}


def reply_for(path: str) -> bytes:
    """The upstream's reply: the format the request path asks for."""
    for f in FORMAT.values():
        if path.split("?")[0] == f.path:
            return f.reply
    return FORMAT["anthropic"].reply


def convert(body: bytes, fmt: str) -> bytes:
    """An Anthropic Messages body (the bench's session) as the same session in `fmt`."""
    if fmt == "anthropic":
        return body
    req = json.loads(body)
    system = "\n\n".join(b["text"] for b in req.get("system", []))
    tools = req.get("tools", [])
    names: dict[str, str] = {}
    if fmt == "chat":
        msgs: list[dict[str, Any]] = [{"role": "system", "content": system}]
        for m in req["messages"]:
            msgs += _chat(m, names)
        return json.dumps(
            {
                "model": "gpt-5",
                "messages": msgs,
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": t["name"],
                            "description": t["description"],
                            "parameters": t["input_schema"],
                        },
                    }
                    for t in tools
                ],
            }
        ).encode()
    if fmt == "responses":
        items: list[dict[str, Any]] = []
        for m in req["messages"]:
            items += _responses(m)
        return json.dumps(
            {
                "model": "gpt-5",
                "instructions": system,
                "input": items,
                "tools": [
                    {
                        "type": "function",
                        "name": t["name"],
                        "description": t["description"],
                        "parameters": t["input_schema"],
                    }
                    for t in tools
                ],
                "store": False,
            }
        ).encode()
    contents = [_gemini(m, names) for m in req["messages"]]
    return json.dumps(
        {
            "systemInstruction": {"parts": [{"text": system}]},
            "contents": contents,
            "tools": [
                {
                    "functionDeclarations": [
                        {
                            "name": t["name"],
                            "description": t["description"],
                            "parameters": t["input_schema"],
                        }
                        for t in tools
                    ]
                }
            ],
        }
    ).encode()


def _blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
    c = m["content"]
    return [{"type": "text", "text": c}] if isinstance(c, str) else c


def _chat(m: dict[str, Any], names: dict[str, str]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    text = "".join(b["text"] for b in _blocks(m) if b["type"] == "text")
    calls = [b for b in _blocks(m) if b["type"] == "tool_use"]
    results = [b for b in _blocks(m) if b["type"] == "tool_result"]
    if m["role"] == "assistant":
        msg: dict[str, Any] = {"role": "assistant", "content": text or None}
        if calls:
            msg["tool_calls"] = [
                {
                    "id": b["id"],
                    "type": "function",
                    "function": {"name": b["name"], "arguments": json.dumps(b["input"])},
                }
                for b in calls
            ]
            names.update({b["id"]: b["name"] for b in calls})
        return [msg]
    out += [
        {"role": "tool", "tool_call_id": b["tool_use_id"], "content": b["content"]} for b in results
    ]
    if text:
        out.append({"role": "user", "content": text})
    return out


def _responses(m: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for b in _blocks(m):
        if b["type"] == "text":
            kind = "output_text" if m["role"] == "assistant" else "input_text"
            out.append(
                {
                    "type": "message",
                    "role": m["role"],
                    "content": [{"type": kind, "text": b["text"]}],
                }
            )
        elif b["type"] == "tool_use":
            out.append(
                {
                    "type": "function_call",
                    "call_id": b["id"],
                    "name": b["name"],
                    "arguments": json.dumps(b["input"]),
                }
            )
        elif b["type"] == "tool_result":
            out.append(
                {
                    "type": "function_call_output",
                    "call_id": b["tool_use_id"],
                    "output": b["content"],
                }
            )
    return out


def _gemini(m: dict[str, Any], names: dict[str, str]) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    for b in _blocks(m):
        if b["type"] == "text":
            parts.append({"text": b["text"]})
        elif b["type"] == "tool_use":
            names[b["id"]] = b["name"]
            parts.append({"functionCall": {"name": b["name"], "args": b["input"]}})
        elif b["type"] == "tool_result":
            name = names.get(b["tool_use_id"], "Read")
            parts.append({"functionResponse": {"name": name, "response": {"output": b["content"]}}})
    return {"role": "model" if m["role"] == "assistant" else "user", "parts": parts}
