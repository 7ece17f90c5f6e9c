"""A loopback fake of the Responses API over WebSocket (Codex's built-in provider).

Each `response.create` frame gets the scripted reply as the stream's events, one frame
each. Later frames carry only new items plus `previous_response_id`, so the connection's
items are put together again before the script reads them; `.seen` records that whole
request (what the agent sent on the connection, plus the model's own items). A plain HTTP
request (Codex's model list) gets a JSON answer; anything else a 404.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import fake_openai
from websockets.datastructures import Headers
from websockets.http11 import Request, Response
from websockets.sync.server import Server, ServerConnection, serve

from agent_script import RESPONSES, Say, Script
from fake_provider import Seen


@dataclass
class FakeWsModels:
    script: Script | None = None
    seen: list[Seen] = field(default_factory=list)
    http: list[str] = field(default_factory=list)  # paths of plain HTTP requests
    server: Server | None = None
    # Other endpoints of the provider's host (path without query → JSON): sign-in, account.
    answers: dict[str, Any] = field(default_factory=dict)

    @property
    def url(self) -> str:
        assert self.server is not None
        return f"http://127.0.0.1:{self.server.socket.getsockname()[1]}"

    def start(self) -> FakeWsModels:
        self.server = serve(self._handle, "127.0.0.1", 0, process_request=self._http)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()

    def _http(self, conn: ServerConnection, request: Request) -> Response | None:
        if request.headers.get("upgrade", "").lower() == "websocket":
            return None
        self.http.append(request.path)
        path = request.path.split("?")[0]
        if path in self.answers:
            body, status = json.dumps(self.answers[path]).encode(), HTTPStatus.OK
        elif path.endswith("/models"):
            body = json.dumps(
                {"object": "list", "models": [], "data": [{"id": "gpt-fake", "object": "model"}]}
            ).encode()
            status = HTTPStatus.OK
        else:
            body, status = b'{"error": {"message": "not here"}}', HTTPStatus.NOT_FOUND
        return Response(
            status.value,
            status.phrase,
            Headers({"content-type": "application/json", "content-length": str(len(body))}),
            body,
        )

    def _handle(self, ws: ServerConnection) -> None:
        items: list[Any] = []
        headers = {k.lower(): v for k, v in ws.request.headers.raw_items()} if ws.request else {}
        path = ws.request.path if ws.request else "/"
        for raw in ws:
            frame = json.loads(raw)
            if frame.get("type") != "response.create":
                continue
            req = {k: v for k, v in frame.items() if k != "type"}
            if not req.get("previous_response_id"):
                items = []
            items.extend(req.get("input") or [])
            whole = {**req, "input": list(items)}
            self.seen.append(Seen("WS", path, headers, json.dumps(whole).encode()))
            turns = (self.script(RESPONSES, whole) if self.script else None) or [Say("ok")]
            events = fake_openai.response_events(turns, str(req.get("model") or "fake"))
            for _name, event in events:
                ws.send(json.dumps(event))
            items.extend(events[-1][1]["response"]["output"])
