"""A fake Gemini upstream on loopback: generateContent (JSON), streamGenerateContent (SSE) and
countTokens, recording every request. Code Assist paths (`/v1internal:…`) get their answers
wrapped in `response`, as cloudcode-pa wraps them."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from fake_provider import Seen
from loopback import LoopbackServer

USAGE = {"promptTokenCount": 31, "candidatesTokenCount": 7, "cachedContentTokenCount": 5,
         "totalTokenCount": 38}


@dataclass
class FakeGemini(LoopbackServer):
    """Start with .start(); every request lands in .seen. Knob: sse_delay (per chunk)."""

    sse_delay: float = 0.0
    reply_text: str = "Hello from the fake Gemini upstream."
    seen: list[Seen] = field(default_factory=list)
    streams_finished: list[float] = field(default_factory=list)  # monotonic time of each end

    def start(self) -> FakeGemini:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.seen.append(Seen(self.command, self.path,
                                      {k.lower(): v for k, v in self.headers.items()}, body))
                method = self.path.split("?")[0].rsplit(":", 1)[-1]
                wrap = "/v1internal:" in self.path
                if method == "countTokens":
                    self._json({"totalTokens": len(body) // 4})
                elif method == "streamGenerateContent":
                    self._sse([fake._wrap(c, wrap) for c in fake.chunks()])
                else:
                    self._json(fake._wrap(fake.response(), wrap))

            def _json(self, obj: Any) -> None:
                data = json.dumps(obj).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json; charset=UTF-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, chunks: list[dict[str, Any]]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
                    self.wfile.flush()
                    if fake.sse_delay:
                        time.sleep(fake.sse_delay)
                fake.streams_finished.append(time.monotonic())
                self.close_connection = True

        self.serve(Handler)
        return self


    def response(self) -> dict[str, Any]:
        return {"candidates": [{"content": {"role": "model",
                                            "parts": [{"text": self.reply_text}]},
                                "finishReason": "STOP", "index": 0}],
                "usageMetadata": USAGE, "modelVersion": "gemini-fake"}

    def chunks(self) -> list[dict[str, Any]]:
        """One chunk per word; every chunk carries the usage so far, as Gemini's do."""
        words = self.reply_text.split(" ")
        out = []
        for i, word in enumerate(words):
            last = i == len(words) - 1
            candidate: dict[str, Any] = {"content": {
                "role": "model", "parts": [{"text": word if i == 0 else " " + word}]},
                "index": 0}
            if last:
                candidate["finishReason"] = "STOP"
            usage = USAGE if last else {**USAGE, "candidatesTokenCount": i + 1}
            out.append({"candidates": [candidate], "usageMetadata": usage,
                        "modelVersion": "gemini-fake"})
        return out

    @staticmethod
    def _wrap(obj: dict[str, Any], wrap: bool) -> dict[str, Any]:
        return {"response": obj, "traceId": "fake-trace"} if wrap else obj
