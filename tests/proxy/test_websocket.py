"""Responses over WebSocket: every frame screened, calls remembered across the connection."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from websockets.sync.client import connect
from websockets.sync.server import Server, ServerConnection, serve

from conftest import fake_secret
from gate.audit.store import AuditStore
from gate.config import Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening


class FakeWsProvider:
    """Answers each response.create with a tool call (first turn) or text, recording frames."""

    def __init__(self, project: str):
        self.project = project
        self.frames: list[str] = []
        self.server: Server = serve(self._handle, "127.0.0.1", 0)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.socket.getsockname()[1]}"

    def _handle(self, ws: ServerConnection) -> None:
        for raw in ws:
            text = raw if isinstance(raw, str) else raw.decode()
            self.frames.append(text)
            n = len(self.frames)
            ws.send(json.dumps({"type": "response.created", "response": {"id": f"resp_{n}"}}))
            if n == 1:  # the model asks to run a command
                ws.send(
                    json.dumps(
                        {
                            "type": "response.output_item.done",
                            "output_index": 0,
                            "item": {
                                "type": "function_call",
                                "call_id": "call_env",
                                "name": "exec_command",
                                "arguments": json.dumps(
                                    {"cmd": "cat .env", "workdir": self.project}
                                ),
                            },
                        }
                    )
                )
            ws.send(
                json.dumps(
                    {
                        "type": "response.completed",
                        "response": {
                            "id": f"resp_{n}",
                            "usage": {"input_tokens": 11 * n, "output_tokens": 2},
                        },
                    }
                )
            )


@pytest.fixture
def ws_setup(gate_dirs: dict[str, Path]) -> Iterator[tuple[FakeWsProvider, Listening]]:
    fake = FakeWsProvider(str(gate_dirs["project"]))
    config = replace(Config(), port=0, projects=(str(gate_dirs["project"]),)).with_upstreams(
        {"openai": parse_upstream("openai", fake.url)}
    )
    server = BackgroundGate(config, gate_dirs["data"])
    listening = server.start()
    yield fake, listening
    server.stop()
    fake.server.shutdown()


def _events(ws: Any) -> list[dict[str, Any]]:
    out = []
    while True:
        event = json.loads(ws.recv(timeout=10))
        out.append(event)
        if event["type"] in ("response.completed", "error"):
            return out


def test_outputs_are_screened_the_first_time_they_are_sent(
    ws_setup: tuple[FakeWsProvider, Listening], gate_dirs: dict[str, Path]
) -> None:
    fake, gate = ws_setup
    project, secret = str(gate_dirs["project"]), fake_secret()
    url = f"{gate.base_url.replace('http', 'ws')}/openai/v1/responses"
    with connect(
        url,
        additional_headers={
            "authorization": "Bearer sk-fake",
            "openai-beta": "responses_websockets=2026-02-06",
        },
    ) as ws:
        ws.send(
            json.dumps(
                {
                    "type": "response.create",
                    "model": "gpt-test",
                    "input": [
                        {
                            "type": "message",
                            "role": "user",
                            "content": [
                                {
                                    "type": "input_text",
                                    "text": f"<environment_context><cwd>{project}</cwd>"
                                    "</environment_context>",
                                }
                            ],
                        }
                    ],
                }
            )
        )
        first = _events(ws)
        assert first[1]["item"]["call_id"] == "call_env"
        # The next frame carries only the new output: its call lives upstream, and the gate
        # remembered it from the provider's events on this connection.
        ws.send(
            json.dumps(
                {
                    "type": "response.create",
                    "model": "gpt-test",
                    "previous_response_id": "resp_1",
                    "input": [
                        {
                            "type": "function_call_output",
                            "call_id": "call_env",
                            "output": f"TOKEN={secret}",
                        }
                    ],
                }
            )
        )
        _events(ws)
    assert len(fake.frames) == 2
    assert secret not in fake.frames[1]
    sent = json.loads(fake.frames[1])
    assert sent["type"] == "response.create" and sent["previous_response_id"] == "resp_1"
    assert f"reads {project}/.env" in sent["input"][0]["output"]
    ws_rows = _completed_ws_rows(gate_dirs["data"], 2)
    assert [r["verdict"] for r in ws_rows] == ["modified", "forwarded"]
    assert ws_rows[0]["input_tokens"] == 22 and ws_rows[1]["input_tokens"] == 11
    assert secret not in (ws_rows[0]["body"] or "")


def _completed_ws_rows(data: Path, n: int, timeout: float = 10.0) -> list[dict[str, Any]]:
    """The WebSocket rows once the audit's worker has completed them with their usage (it
    writes responses in batches, a moment after the events passed)."""
    store = AuditStore(data / "audit.db")
    deadline = time.monotonic() + timeout
    while True:
        rows = [r for r in store.rows(5) if r["method"] == "WS"]
        done = len(rows) >= n and all(r["input_tokens"] is not None for r in rows)
        if done or time.monotonic() > deadline:
            return rows
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("frame", "words"),
    [
        ("not json", "not JSON"),
        (b"\x00binary", "binary"),
        (
            json.dumps(
                {
                    "type": "response.create",
                    "input": [
                        {"type": "function_call_output", "call_id": "x", "output": "a"},
                        {"type": "function_call_output", "call_id": "x", "output": "b"},
                    ],
                }
            ),
            "two tool results",
        ),
    ],
)
def test_unscreenable_frames_are_dropped_and_the_agent_is_told(
    ws_setup: tuple[FakeWsProvider, Listening],
    gate_dirs: dict[str, Path],
    frame: str | bytes,
    words: str,
) -> None:
    fake, gate = ws_setup
    with connect(f"{gate.base_url.replace('http', 'ws')}/openai/v1/responses") as ws:
        ws.send(frame)
        event = json.loads(ws.recv(timeout=10))
    assert event["type"] == "error" and event["code"] == "gate_blocked"
    assert words in event["message"]
    assert fake.frames == []
    # Recorded as a refused HTTP request is: the frame's connection, and why.
    row = next(AuditStore(gate_dirs["data"] / "audit.db").rows(1))
    assert (row["method"], row["verdict"], row["upstream"]) == ("WS", "blocked", "openai")
    assert words in row["reason"] and row["session"].startswith("w:")


def test_websocket_elsewhere_is_refused(ws_setup: tuple[FakeWsProvider, Listening]) -> None:
    from websockets.exceptions import InvalidStatus

    _, gate = ws_setup
    with pytest.raises(InvalidStatus) as info:
        connect(f"{gate.base_url.replace('http', 'ws')}/openai/v1/chat/completions")
    assert info.value.response.status_code == 400


def test_fields_beside_a_response_wrapper_are_screened_too(
    ws_setup: tuple[FakeWsProvider, Listening], gate_dirs: dict[str, Path]
) -> None:
    fake, gate = ws_setup
    (gate_dirs["home"] / ".ssh").mkdir()
    key_line = "b3Blb" + fake_secret()
    (gate_dirs["home"] / ".ssh" / "id_ed25519").write_text(
        f"-----BEGIN OPENSSH PRIVATE KEY-----\n{key_line}\n-----END OPENSSH PRIVATE KEY-----\n"
    )
    with connect(f"{gate.base_url.replace('http', 'ws')}/openai/v1/responses") as ws:
        ws.send(
            json.dumps(
                {
                    "type": "response.create",
                    "response": {"model": "m", "input": []},
                    "input": [{"type": "message", "role": "user", "content": f"key {key_line}"}],
                }
            )
        )
        _events(ws)
    assert key_line not in fake.frames[0]
    assert "withheld a value from id_ed25519" in fake.frames[0]
