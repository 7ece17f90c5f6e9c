"""Screening and the audit write run off the event loop: while one request waits for them,
gate keeps relaying other agents' streams; the request itself still leaves only after."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

import httpx2 as httpx
import pytest
from mitmproxy.test import taddons, tflow
from mitmproxy.websocket import WebSocketMessage
from websockets.sync.client import ClientConnection, connect
from websockets.sync.server import ServerConnection, serve
from wsproto.frame_protocol import Opcode

from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from gate.config import AuditSettings, Config, parse_upstream
from gate.proxy import pipeline, routing, websocket
from gate.proxy.addon import GateAddon
from gate.proxy.server import BackgroundGate, Listening
from gate.rules.layers import PolicyStore

T = TypeVar("T")

# Long enough that a request waiting for the audit lock the test holds is never refused for
# it: the test releases the lock itself.
_PATIENT = AuditSettings(lock_timeout_ms=60_000)


def _gate(config: Config, dirs: dict[str, Path]) -> Iterator[Listening]:
    config = replace(config, port=0, audit=_PATIENT, projects=(str(dirs["project"]),))
    server = BackgroundGate(config, dirs["data"])
    yield server.start()
    server.stop()


@pytest.fixture
def patient_gate(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    config = Config().with_upstreams({"anthropic": parse_upstream("anthropic", provider.url)})
    yield from _gate(config, gate_dirs)


def _held_audit(data_dir: Path) -> sqlite3.Connection:
    """The audit's write lock, taken by the test: every request's row waits for it."""
    db = sqlite3.connect(data_dir / "audit.db", timeout=30, isolation_level=None)
    db.execute("BEGIN IMMEDIATE")
    return db


def _writing_a_row() -> list[str]:
    """The threads now inside the audit's request insert (waiting for its lock)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    found = []
    for ident, frame in sys._current_frames().items():
        f: Any = frame
        while f is not None:
            code = f.f_code
            if code.co_name == "record_request" and code.co_filename.endswith(
                "gate/audit/store.py"
            ):
                found.append(names.get(ident, "?"))
                break
            f = f.f_back
    return found


def _wait_for_writer(count: int = 1) -> list[str]:
    deadline = time.monotonic() + 20
    while len(found := _writing_a_row()) < count:
        assert time.monotonic() < deadline, "no request reached the audit insert"
        time.sleep(0.01)
    return found


def _post(url: str, body: dict[str, Any], out: dict[str, Any]) -> None:
    try:
        out["response"] = httpx.post(url, json=body, headers={"x-api-key": "k"}, timeout=60)
    except Exception as exc:  # reported by the test's assert
        out["error"] = exc


def test_a_stream_goes_on_while_another_request_waits_for_its_audit_row(
    patient_gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    provider.hold = threading.Event()
    url = f"{patient_gate.base_url}/anthropic/v1/messages"
    chat = {"model": "claude-test", "max_tokens": 8, "messages": [{"role": "user", "content": "a"}]}
    events: list[str] = []
    with httpx.stream(
        "POST", url, json={**chat, "stream": True}, headers={"x-api-key": "k"}, timeout=15
    ) as a:
        assert a.status_code == 200
        lines = a.iter_lines()
        for line in lines:  # A's first event: its row is written, its stream under way
            if line.startswith("event:"):
                events.append(line.split(":", 1)[1].strip())
                break
        db = _held_audit(gate_dirs["data"])
        try:
            b: dict[str, Any] = {}
            sender = threading.Thread(target=_post, args=(url, chat, b))
            sender.start()
            # B is screened, and its row now waits for the lock, on a worker thread.
            assert all(name.startswith("gate-screen") for name in _wait_for_writer())
            provider.hold.set()
            # The rest of A's stream is relayed meanwhile (a loop blocked by B's audit write
            # would relay nothing until the lock is released: A's read would time out).
            for line in lines:
                if line.startswith("event:"):
                    events.append(line.split(":", 1)[1].strip())
            assert events[0] == "message_start" and events[-1] == "message_stop"
            assert sender.is_alive() and not b  # B still waits: it is never sent before
            assert len(provider.seen) == 1
        finally:
            db.execute("COMMIT")
            db.close()
    sender.join(30)
    assert "error" not in b and b["response"].status_code == 200
    assert len(provider.seen) == 2 and "stream" not in provider.seen[1].json()


class _WsUpstream:
    """Records each frame it receives and completes a response for it."""

    def __init__(self) -> None:
        self.frames: list[str] = []
        self.server = serve(self._handle, "127.0.0.1", 0)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _handle(self, ws: ServerConnection) -> None:
        for raw in ws:
            self.frames.append(raw if isinstance(raw, str) else raw.decode())
            done = {"id": f"resp_{len(self.frames)}", "usage": {"input_tokens": 1}}
            ws.send(json.dumps({"type": "response.completed", "response": done}))


def _completed(ws: ClientConnection) -> str:
    return str(json.loads(ws.recv(timeout=30))["type"])


@pytest.fixture
def ws_gate(gate_dirs: dict[str, Path]) -> Iterator[tuple[_WsUpstream, Listening]]:
    fake = _WsUpstream()
    url = f"http://127.0.0.1:{fake.server.socket.getsockname()[1]}"
    config = Config().with_upstreams({"openai": parse_upstream("openai", url)})
    yield from ((fake, g) for g in _gate(config, gate_dirs))
    fake.server.shutdown()


def test_a_frame_sent_while_the_one_before_is_screened_leaves_after_it(
    ws_gate: tuple[_WsUpstream, Listening], gate_dirs: dict[str, Path]
) -> None:
    fake, gate = ws_gate
    first = {"type": "response.create", "model": "m", "input": "first " + "x" * 200_000}
    second = {"type": "response.create", "model": "m", "input": "second"}
    with connect(f"{gate.base_url.replace('http', 'ws')}/openai/v1/responses") as ws:
        db = _held_audit(gate_dirs["data"])
        try:
            ws.send(json.dumps(first))
            assert _wait_for_writer() and fake.frames == []  # the first waits for its row
            ws.send(json.dumps(second))  # small: screened at once, were it let through
        finally:
            db.execute("COMMIT")
            db.close()
        assert [_completed(ws), _completed(ws)] == ["response.completed"] * 2
    assert [json.loads(f)["input"][:6] for f in fake.frames] == ["first ", "second"]


class _Gated(pipeline.Offload):
    """The gate's worker threads, with the first frame's audit write held until the test
    lets it go (a small frame is screened on the loop, then recorded on a thread)."""

    def __init__(self) -> None:
        super().__init__()
        self.frames: list[bytes] = []
        self.release = asyncio.Event()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        if getattr(fn, "__name__", "") == "_sendable":
            self.frames.append(args[0].job.raw)
            if len(self.frames) == 1:
                await self.release.wait()
        return await super().run(fn, *args)


def test_the_addon_screens_one_frame_of_a_connection_at_a_time(
    gate_dirs: dict[str, Path],
) -> None:
    config = replace(Config(), projects=(str(gate_dirs["project"]),)).with_upstreams(
        {"openai": parse_upstream("openai", "http://127.0.0.1:9")}
    )
    route = routing.resolve("/openai/v1/responses", config.upstreams)
    assert route is not None
    gated = _Gated()
    audit = AuditStore(gate_dirs["data"] / "audit.db")
    addon = GateAddon(config, gate_dirs["data"], PolicyStore(), audit, offload=gated)
    flow = tflow.twebsocketflow(messages=False)
    assert flow.websocket is not None
    flow.metadata["gate_ws"] = websocket.Connection(route=route, run=None, agent=None)
    frames = [json.dumps({"type": "response.create", "input": n}).encode() for n in "ab"]

    async def main() -> None:
        with taddons.context(addon):
            tasks = []
            for frame in frames:  # each hook reads the message that was last when it ran
                flow.websocket.messages.append(WebSocketMessage(Opcode.TEXT, True, frame))
                tasks.append(asyncio.ensure_future(addon.websocket_message(flow)))
                # The first frame goes to a thread (the project's denied index is built
                # first): wait until it is held at its audit write, however long that takes.
                for _ in range(1000):
                    if gated.frames:
                        break
                    await asyncio.sleep(0.01)
                for _ in range(50):  # the loop runs the new hook as far as it can go
                    await asyncio.sleep(0)
            assert gated.frames == frames[:1]  # the second waits for the first
            gated.release.set()
            await asyncio.gather(*tasks)
            addon.done()

    asyncio.run(main())
    assert gated.frames == frames
    rows = list(audit.rows(5))
    assert [json.loads(r["body"])["input"] for r in reversed(rows)] == ["a", "b"]
    audit.close()
