"""A fake Anthropic Messages API on 127.0.0.1 that records every body it gets."""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

REPLY = "Done: I looked at the files."


class _Server(ThreadingHTTPServer):
    # socketserver's backlog of 5 overflows when an agent opens many connections at once:
    # the kernel then answers with SYN cookies and may reset a connection the client
    # believes open (the gate reports "server closed connection").
    request_queue_size = 1024
    daemon_threads = True


class FakeProvider:
    """Answers POST /v1/messages with one short text reply; keeps what it received."""

    def __init__(self) -> None:
        self.seen: list[bytes] = []
        seen, ids = self.seen, itertools.count(1)

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass  # the demo's output is the terminal's, not the fake's

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                seen.append(body)
                reply = json.dumps(
                    {
                        "id": f"msg_demo_{next(ids)}",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-demo",
                        "content": [{"type": "text", "text": REPLY}],
                        "stop_reason": "end_turn",
                        "stop_sequence": None,
                        "usage": {"input_tokens": len(body) // 4, "output_tokens": 8},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

        self._server = _Server(("127.0.0.1", 0), Handler)
        # stop() waits for serve_forever's next look (socketserver's default: every 0.5 s).
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> FakeProvider:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
