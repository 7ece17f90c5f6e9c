"""A fake Gemini upstream on loopback: generateContent (JSON), streamGenerateContent (SSE) and
countTokens, recording every request. Code Assist paths (`/v1internal:…`) get their answers
wrapped in `response`, as cloudcode-pa wraps them, and the setup calls Gemini CLI makes when
signed in with Google (`loadCodeAssist`, `onboardUser`, …) get minimal answers in the shapes
the CLI's bundle reads (@google/gemini-cli 0.61, packages/core/src/code_assist/)."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import fake_gemini

from agent_script import GEMINI, Say, Script
from fake_provider import Seen
from loopback import LoopbackServer, event_stream

USAGE = {
    "promptTokenCount": 31,
    "candidatesTokenCount": 7,
    "cachedContentTokenCount": 5,
    "totalTokenCount": 38,
}
PROJECT = "fake-companion-project"
_TIER = {"id": "free-tier", "name": "Gemini Code Assist for individuals", "isDefault": True}


def code_assist_setup(method: str, onboarded: bool) -> dict[str, Any] | None:
    """The answer to one Code Assist setup call, None for a method that is not one.

    A user not yet onboarded gets offered the free tier (loadCodeAssist), takes it
    (onboardUser, a finished operation naming the project), and is then served from it.
    """
    if method == "loadCodeAssist":
        return (
            {"currentTier": _TIER, "allowedTiers": [_TIER], "cloudaicompanionProject": PROJECT}
            if onboarded
            else {"allowedTiers": [_TIER]}
        )
    answers: dict[str, dict[str, Any]] = {
        "onboardUser": {
            "done": True,
            "response": {"cloudaicompanionProject": {"id": PROJECT, "name": PROJECT}},
        },
        "listExperiments": {"experimentIds": [], "flags": []},
        "fetchAdminControls": {"adminControlsApplicable": False},
        "getCodeAssistGlobalUserSetting": {"freeTierDataCollectionOptin": False},
        "setCodeAssistGlobalUserSetting": {},
        "recordCodeAssistMetrics": {},
        "retrieveUserQuota": {"buckets": []},
    }
    return answers.get(method)


@dataclass
class FakeGemini(LoopbackServer):
    """Start with .start(); every request lands in .seen. Knobs: sse_delay (per chunk);
    script (a scripted model: tool calls, then text) instead of reply_text."""

    sse_delay: float = 0.0
    reply_text: str = "Hello from the fake Gemini upstream."
    script: Script | None = None
    seen: list[Seen] = field(default_factory=list)
    onboarded: bool = False  # Code Assist: whether onboardUser was called
    streams_finished: list[float] = field(default_factory=list)  # monotonic time of each end

    def start(self) -> FakeGemini:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.do_POST()

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                fake.seen.append(
                    Seen(
                        self.command,
                        self.path,
                        {k.lower(): v for k, v in self.headers.items()},
                        body,
                    )
                )
                method = self.path.split("?")[0].rsplit(":", 1)[-1]
                wrap = "/v1internal:" in self.path
                setup = code_assist_setup(method, fake.onboarded) if wrap else None
                fake.onboarded |= wrap and method == "onboardUser"
                if setup is not None:
                    self._json(setup)
                elif self.command != "POST":
                    self._json(
                        {
                            "error": {
                                "code": 404,
                                "message": f"no GET {self.path}",
                                "status": "NOT_FOUND",
                            }
                        },
                        404,
                    )
                elif method == "countTokens":
                    self._json({"totalTokens": len(body) // 4})
                elif method == "streamGenerateContent":
                    self._sse([fake._wrap(c, wrap) for c in fake.chunks(body)])
                else:
                    self._json(fake._wrap(fake.response(), wrap))

            def _json(self, obj: Any, status: int = 200) -> None:
                data = json.dumps(obj).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json; charset=UTF-8")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, chunks: list[dict[str, Any]]) -> None:
                with event_stream(self) as send:
                    for chunk in chunks:
                        send(f"data: {json.dumps(chunk)}\r\n\r\n".encode())
                        if fake.sse_delay:
                            time.sleep(fake.sse_delay)
                    # Before the stream's end is written: once a client has seen the end,
                    # the time is there to read.
                    fake.streams_finished.append(time.monotonic())

        self.serve(Handler)
        return self

    def response(self) -> dict[str, Any]:
        return {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": self.reply_text}]},
                    "finishReason": "STOP",
                    "index": 0,
                }
            ],
            "usageMetadata": USAGE,
            "modelVersion": "gemini-fake",
        }

    def chunks(self, body: bytes = b"") -> list[dict[str, Any]]:
        """One chunk per word; every chunk carries the usage so far, as Gemini's do. With a
        script, one chunk per part it says this turn."""
        if self.script is not None:
            turns = self.script(GEMINI, json.loads(body)) if body else None
            return fake_gemini.chunks(turns or [Say(self.reply_text)], "gemini-fake")
        words = self.reply_text.split(" ")
        out = []
        for i, word in enumerate(words):
            last = i == len(words) - 1
            candidate: dict[str, Any] = {
                "content": {"role": "model", "parts": [{"text": word if i == 0 else " " + word}]},
                "index": 0,
            }
            if last:
                candidate["finishReason"] = "STOP"
            usage = USAGE if last else {**USAGE, "candidatesTokenCount": i + 1}
            out.append(
                {"candidates": [candidate], "usageMetadata": usage, "modelVersion": "gemini-fake"}
            )
        return out

    @staticmethod
    def _wrap(obj: dict[str, Any], wrap: bool) -> dict[str, Any]:
        return {"response": obj, "traceId": "fake-trace"} if wrap else obj
