"""A local decision helper's proposal; WebSocket frames, which cannot be parked."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from dataclasses import replace
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect
from websockets.sync.server import ServerConnection, serve

from ask.ask_kit import AskingGate, env_turn, github_token
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate
from loopback import LoopbackServer


class Helper(LoopbackServer):
    """A decision helper on loopback that proposes `answer` and keeps what it was asked."""

    def __init__(self, answer: str):
        self.asked: list[dict[str, Any]] = []
        helper = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                helper.asked.append(
                    json.loads(self.rfile.read(int(self.headers["content-length"])))
                )
                out = json.dumps({"answer": answer}).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.serve(Handler)


def test_the_helpers_proposal_is_shown_and_applies_when_nobody_answers(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    helper = Helper("block")
    try:
        g = asking(timeout_seconds=1.5, helper_url=f"{helper.url}/propose")
        token = github_token()
        sent = g.send(env_turn(gate_dirs["project"], token))
        [q] = g.wait_pending()
        assert q["proposed"] == "block"
        assert "nobody answered" in str(sent.wait().error) and g.provider.seen == []
    finally:
        helper.stop()
    [asked] = helper.asked
    assert asked["id"] == q["id"] and token not in json.dumps(asked)
    path = g.data / "decisions" / "dataset" / "send-secret.jsonl"
    assert json.loads(path.read_text())["by"] == "helper"


@pytest.fixture
def ws_upstream() -> Iterator[tuple[str, list[str]]]:
    frames: list[str] = []

    def handle(ws: ServerConnection) -> None:
        for raw in ws:
            frames.append(raw if isinstance(raw, str) else raw.decode())
            ws.send(json.dumps({"type": "response.completed", "response": {"id": "r1"}}))

    server = serve(handle, "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.socket.getsockname()[1]}", frames
    server.shutdown()


@pytest.mark.parametrize("default", ["redact", "block"])
def test_a_websocket_frame_gets_the_default_at_once(
    ws_upstream: tuple[str, list[str]], gate_dirs: dict[str, Path], default: str
) -> None:
    url, frames = ws_upstream
    known = (str(gate_dirs["project"]),)  # as `gate serve --project` would
    config = replace(
        Config(), port=0, projects=known, ask=AskConfig(default=default)
    ).with_upstreams({"openai": parse_upstream("openai", url)})
    server = BackgroundGate(config, gate_dirs["data"])
    gate = server.start()
    token = github_token()
    try:
        with connect(
            f"ws://127.0.0.1:{gate.port}/openai/v1/responses",
            additional_headers={"authorization": "Bearer sk-fake"},
        ) as ws:
            ws.send(
                json.dumps(
                    {
                        "type": "response.create",
                        "model": "m",
                        "input": [
                            {
                                "type": "message",
                                "role": "user",
                                "content": [
                                    {"type": "input_text", "text": f"GITHUB_TOKEN={token}"}
                                ],
                            }
                        ],
                    }
                )
            )
            event = json.loads(ws.recv(timeout=10))
    finally:
        server.stop()
    line = json.loads(
        (gate_dirs["data"] / "decisions" / "dataset" / "send-secret.jsonl").read_text()
    )
    assert (line["by"], line["answer"]) == ("policy", default)
    if default == "block":
        assert event["type"] == "error" and "default is block" in event["message"]
        assert frames == []
    else:
        assert event["type"] == "response.completed"
        assert token not in frames[0] and "not approved by the user" in frames[0]
