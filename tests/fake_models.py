"""A recording fake model provider on loopback that speaks every format agents use.

OpenAI Responses and Chat Completions, Gemini (`generateContent`, `streamGenerateContent`,
`countTokens`) and Anthropic Messages, each streamed as the real API streams it. Every
request lands in `.seen` (the body decoded from gzip/zstd); a `Script` decides the replies.
WebSocket upgrades are recorded and refused, as gate refuses them.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import fake_gemini
import fake_openai
import zstandard

from agent_script import ANTHROPIC, CHAT, GEMINI, RESPONSES, Call, Say, Script, Turn
from fake_provider import FakeProvider, Seen
from loopback import LoopbackServer, event_stream


def format_of(path: str) -> str | None:
    p = path.split("?", 1)[0].rstrip("/")
    if p.endswith("/responses"):
        return RESPONSES
    if p.endswith("/chat/completions"):
        return CHAT
    if p.endswith(("/messages", "/messages/count_tokens")):
        return ANTHROPIC
    if ":" in p.rsplit("/", 1)[-1]:
        return GEMINI
    return None


def decode(body: bytes, encoding: str) -> bytes:
    if encoding == "zstd":
        return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    if encoding == "gzip":
        return gzip.decompress(body)
    return body


@dataclass
class FakeModels(LoopbackServer):
    """Start with .start(); `script` decides each reply; `.seen` holds every request."""

    script: Script | None = None
    seen: list[Seen] = field(default_factory=list)
    models: tuple[str, ...] = ("gpt-fake", "claude-fake", "gemini-2.5-pro")
    model_list: list[dict[str, Any]] | None = None  # a provider's own /models entries
    # Other endpoints of the provider's host (path without query → JSON): sign-in, account.
    answers: dict[str, Any] = field(default_factory=dict)

    def start(self) -> FakeModels:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._record(b"")
                if self.headers.get("upgrade"):
                    self._json(403, {"error": {"message": "no WebSocket here"}})
                elif self.path.split("?")[0] in fake.answers:
                    self._json(200, fake.answers[self.path.split("?")[0]])
                elif self.path.split("?")[0].endswith("/models"):
                    self._json(
                        200,
                        {
                            "object": "list",
                            "data": fake.model_list
                            or [
                                {"id": m, "object": "model", "owned_by": "fake"}
                                for m in fake.models
                            ],
                        },
                    )
                else:
                    self._json(404, {"error": {"message": f"no GET {self.path}"}})

            def do_HEAD(self) -> None:
                self._record(b"")
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                body = decode(raw, self.headers.get("content-encoding", ""))
                self._record(body)
                if self.path.split("?")[0] in fake.answers:
                    self._json(200, fake.answers[self.path.split("?")[0]])
                    return
                try:
                    req = json.loads(body) if body else {}
                except ValueError:
                    req = {}
                status, reply = fake.reply(self.path, req)
                if isinstance(reply, list):
                    self._sse(reply)
                else:
                    self._json(status, reply)

            def _record(self, body: bytes) -> None:
                fake.seen.append(
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
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, events: list[tuple[str | None, Any]]) -> None:
                with event_stream(self) as send:
                    for name, data in events:
                        head = f"event: {name}\n" if name else ""
                        text = data if isinstance(data, str) else json.dumps(data)
                        send(f"{head}data: {text}\n\n".encode())

        self.serve(Handler)
        return self

    def turns(self, fmt: str, req: dict[str, Any]) -> list[Turn]:
        turns = self.script(fmt, req) if self.script else None
        return turns if turns is not None else [Say("Hello from the fake model.")]

    def requests(self, fmt: str) -> list[Seen]:
        """The recorded requests in one format, in order."""
        return [s for s in self.seen if s.body and format_of(s.path) == fmt]

    def reply(self, path: str, req: dict[str, Any]) -> tuple[int, Any]:
        """(status, JSON body) or (200, [SSE events]) for one request."""
        fmt = format_of(path)
        model = str(req.get("model") or "fake")
        stream = bool(req.get("stream"))
        if fmt == RESPONSES:
            turns = self.turns(fmt, req)
            return 200, (
                fake_openai.response_events(turns, model)
                if stream
                else fake_openai.response(turns, model)
            )
        if fmt == CHAT:
            turns = self.turns(fmt, req)
            if not stream:
                return 200, fake_openai.completion(turns, model)
            return 200, [*fake_openai.completion_chunks(turns, model), (None, "[DONE]")]
        if fmt == GEMINI:
            return self._gemini(path, req)
        if fmt == ANTHROPIC:
            if path.split("?")[0].endswith("/count_tokens"):
                return 200, {"input_tokens": 21}
            anthropic = FakeProvider(script=lambda _p, r: _blocks(self.turns(ANTHROPIC, r)))
            return 200, (anthropic.events(req) if stream else anthropic.message(req))
        return 404, {"error": {"message": f"the fake model does not serve {path}"}}

    def _gemini(self, path: str, req: dict[str, Any]) -> tuple[int, Any]:
        method = path.split("?", 1)[0].rsplit(":", 1)[-1]
        model = fake_gemini.model_of(path)
        if method == "countTokens":
            return 200, {"totalTokens": 21}
        turns = self.turns(GEMINI, req)
        if method == "streamGenerateContent":
            return 200, [(None, c) for c in fake_gemini.chunks(turns, model)]
        return 200, fake_gemini.generate(turns, model)


def _blocks(turns: list[Turn]) -> list[dict[str, Any]]:
    return [
        {
            "type": "tool_use",
            "id": "toolu_" + t.id.removeprefix("call_"),
            "name": t.name,
            "input": t.args,
        }
        if isinstance(t, Call)
        else {"type": "text", "text": t.text}
        for t in turns
    ]
