"""A fake model provider on loopback: Anthropic Messages (JSON and SSE), recording every request."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class FakeProvider:
    """Start with .start(); every request lands in .seen. Knobs: sse_delay, fail_status."""

    sse_delay: float = 0.0
    fail_status: int | None = None
    seen: list[Seen] = field(default_factory=list)
    reply_text: str = "Hello from the fake provider."

    def start(self) -> FakeProvider:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._record(b"")
                self._json(200, {"data": [], "object": "list"})

            def do_POST(self) -> None:
                n = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(n)
                self._record(body)
                if provider.fail_status:
                    self._json(provider.fail_status, {"type": "error", "error": {
                        "type": "overloaded_error", "message": "Overloaded (fake)"}})
                    return
                req = json.loads(body) if body else {}
                if self.path.split("?")[0].endswith("/count_tokens"):
                    self._json(200, {"input_tokens": len(body) // 4})
                elif req.get("stream"):
                    self._sse(req)
                else:
                    self._json(200, provider.message(req))

            def _record(self, body: bytes) -> None:
                provider.seen.append(Seen(self.command, self.path,
                                          {k.lower(): v for k, v in self.headers.items()}, body))

            def _json(self, status: int, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, req: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("connection", "close")
                self.end_headers()
                for name, data in provider.events(req):
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                    if provider.sse_delay:
                        time.sleep(provider.sse_delay)
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def message(self, req: dict[str, Any]) -> dict[str, Any]:
        return {
            "id": "msg_fake", "type": "message", "role": "assistant",
            "model": req.get("model", "claude-fake"),
            "content": [{"type": "text", "text": self.reply_text}],
            "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": 21, "output_tokens": 7,
                      "cache_read_input_tokens": 3, "cache_creation_input_tokens": 0},
        }

    def events(self, req: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        msg = self.message(req)
        start = {**msg, "content": [], "stop_reason": None,
                 "usage": {**msg["usage"], "output_tokens": 1}}
        words = self.reply_text.split(" ")
        out: list[tuple[str, dict[str, Any]]] = [
            ("message_start", {"type": "message_start", "message": start}),
            ("ping", {"type": "ping"}),
            ("content_block_start", {"type": "content_block_start", "index": 0,
                                     "content_block": {"type": "text", "text": ""}}),
        ]
        for i, w in enumerate(words):
            text = w if i == 0 else " " + w
            out.append(("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                "delta": {"type": "text_delta", "text": text}}))
        out += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta",
                               "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                               "usage": {"output_tokens": 7}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        return out
