"""A fake model provider on loopback: Anthropic Messages (JSON and SSE), recording every request."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from loopback import LoopbackServer, event_stream

_IDS = itertools.count(1)


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class FakeProvider(LoopbackServer):
    """Start with .start(); every request lands in .seen. Knobs: sse_delay, fail_status, script.

    `script`, when set, is called with (path, request body) for each /v1/messages request and
    returns the assistant content blocks to reply with (text and tool_use blocks), or None
    for the default reply. A reply holding a tool_use ends with stop_reason "tool_use".
    """

    sse_delay: float = 0.0
    # When set, a stream sends its first event, then waits for this before the rest (a
    # test decides when the stream goes on).
    hold: threading.Event | None = None
    fail_status: int | None = None
    seen: list[Seen] = field(default_factory=list)
    # Requests whose body was cut short (the sender died mid-request): never received.
    cut: list[Seen] = field(default_factory=list)
    streams_finished: list[float] = field(default_factory=list)  # monotonic time of each end
    reply_text: str = "Hello from the fake provider."
    script: Callable[[str, dict[str, Any]], list[dict[str, Any]] | None] | None = None
    # (method, path, request JSON) → a JSON reply for endpoints the fake does not speak
    # (Assistants runs, file uploads), or None for the default handling.
    answer: Callable[[str, str, Any], Any] | None = None
    # Extra headers on every JSON reply (a resumable upload's session URL, say).
    reply_headers: dict[str, str] = field(default_factory=dict)

    def start(self) -> FakeProvider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._record(b"")
                if provider.answer and (got := provider.answer("GET", self.path, None)):
                    self._json(200, got)
                    return
                self._json(200, {"data": [], "object": "list"})

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n)
                if len(body) < n:  # a server drops a request whose body never came whole
                    provider.cut.append(Seen(self.command, self.path, dict(self.headers), body))
                    self.close_connection = True
                    return
                self._record(body)
                if provider.fail_status:
                    self._json(
                        provider.fail_status,
                        {
                            "type": "error",
                            "error": {"type": "overloaded_error", "message": "Overloaded (fake)"},
                        },
                    )
                    return
                try:  # compressed or malformed bodies are recorded, then answered generically
                    req = json.loads(body) if body else {}
                except ValueError:
                    req = {}
                route = self.path.split("?")[0]
                if provider.answer and (got := provider.answer("POST", self.path, req)):
                    self._json(200, got)
                elif route.endswith(("/chat/completions", "/responses")):
                    self._openai(route, req)
                elif route.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": len(body) // 4})
                elif req.get("stream"):
                    self._sse(req)
                else:
                    self._json(200, provider.message(req, self.path))

            def _record(self, body: bytes) -> None:
                provider.seen.append(
                    Seen(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                for name, value in provider.reply_headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def _openai(self, route: str, req: dict[str, Any]) -> None:
                chat = route.endswith("/chat/completions")
                if not req.get("stream"):
                    self._json(200, provider.chat(req) if chat else provider.response(req))
                    return
                with event_stream(self) as send:
                    for event in provider.openai_events(req, chat):
                        head = "" if chat else f"event: {event.get('type')}\n"
                        send(f"{head}data: {json.dumps(event)}\n\n".encode())
                    if chat:
                        send(b"data: [DONE]\n\n")

            def _sse(self, req: dict[str, Any]) -> None:
                with event_stream(self) as send:
                    for i, (name, data) in enumerate(provider.events(req, self.path)):
                        if i == 1 and provider.hold is not None:
                            provider.hold.wait(30)
                        send(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                        if provider.sse_delay:
                            time.sleep(provider.sse_delay)
                    # Before the stream's end is written: once a client has seen the end,
                    # the time is there to read.
                    provider.streams_finished.append(time.monotonic())

        self.serve(Handler)
        return self

    def content(self, req: dict[str, Any], path: str = "") -> list[dict[str, Any]]:
        blocks = self.script(path, req) if self.script else None
        return blocks if blocks is not None else [{"type": "text", "text": self.reply_text}]

    def message(self, req: dict[str, Any], path: str = "") -> dict[str, Any]:
        content = self.content(req, path)
        tool = any(b.get("type") == "tool_use" for b in content)
        return {
            # A new id per reply, as the API gives: Claude Code merges assistant messages
            # that share one (so every turn would rewrite one growing message).
            "id": f"msg_fake_{next(_IDS)}",
            "type": "message",
            "role": "assistant",
            "model": req.get("model", "claude-fake"),
            "content": content,
            "stop_reason": "tool_use" if tool else "end_turn",
            "stop_sequence": None,
            "usage": {
                "input_tokens": 21,
                "output_tokens": 7,
                "cache_read_input_tokens": 3,
                "cache_creation_input_tokens": 0,
            },
        }

    def events(self, req: dict[str, Any], path: str = "") -> list[tuple[str, dict[str, Any]]]:
        msg = self.message(req, path)
        start = {
            **msg,
            "content": [],
            "stop_reason": None,
            "usage": {**msg["usage"], "output_tokens": 1},
        }
        out: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
            ("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(msg["content"]):
            out += _block_events(index, block)
        out += [
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": 7},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return out

    # -- OpenAI Chat Completions and Responses ---------------------------------------------

    def chat(self, req: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": 0,
            "model": req.get("model", "gpt-fake"),
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": self.reply_text},
                }
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 6, "total_tokens": 36},
        }

    def response(self, req: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "resp_fake",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": req.get("model", "gpt-fake"),
            "output": [
                {
                    "type": "message",
                    "id": "msg_1",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": self.reply_text, "annotations": []}
                    ],
                }
            ],
            "usage": {
                "input_tokens": 40,
                "output_tokens": 6,
                "total_tokens": 46,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
        }

    def openai_events(self, req: dict[str, Any], chat: bool) -> list[dict[str, Any]]:
        if chat:
            base = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": req.get("model", "gpt-fake"),
            }
            return [
                {
                    **base,
                    "choices": [
                        {"index": 0, "delta": {"role": "assistant", "content": self.reply_text}}
                    ],
                },
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
                {**base, "choices": [], "usage": self.chat(req)["usage"]},
            ]
        done = self.response(req)
        item = done["output"][0]
        created = {
            "type": "response.created",
            "response": {**done, "status": "in_progress", "output": [], "usage": None},
        }
        if item.get("type") != "message":  # a tool call: added, then done
            events = [
                created,
                {"type": "response.output_item.added", "output_index": 0, "item": item},
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {"type": "response.completed", "response": done},
            ]
            return [{**e, "sequence_number": i} for i, e in enumerate(events)]
        part = item["content"][0]
        at = {"item_id": "msg_1", "output_index": 0, "content_index": 0}
        events = [
            created,
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**item, "status": "in_progress", "content": []},
            },
            {"type": "response.content_part.added", **at, "part": {**part, "text": ""}},
            {"type": "response.output_text.delta", **at, "delta": self.reply_text, "logprobs": []},
            {"type": "response.output_text.done", **at, "text": self.reply_text, "logprobs": []},
            {"type": "response.content_part.done", **at, "part": part},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": done},
        ]
        return [{**e, "sequence_number": i} for i, e in enumerate(events)]


def _block_events(index: int, block: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """The SSE events that stream one content block: start, deltas, stop."""
    out: list[tuple[str, dict[str, Any]]] = []
    if block.get("type") == "tool_use":
        out.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {**block, "input": {}},
                },
            )
        )
        out.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": json.dumps(block["input"]),
                    },
                },
            )
        )
    else:
        out.append(
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": index,
                    "content_block": {"type": "text", "text": ""},
                },
            )
        )
        for i, w in enumerate(str(block.get("text", "")).split(" ")):
            text = w if i == 0 else " " + w
            out.append(
                (
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": index,
                        "delta": {"type": "text_delta", "text": text},
                    },
                )
            )
    out.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    return out
