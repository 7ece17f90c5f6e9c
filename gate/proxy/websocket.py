"""Responses over WebSocket (Codex's built-in provider): what a connection remembers while
each frame the agent sends is screened as an HTTP body is (gate/proxy/addon.py).

Later frames carry only new items plus `previous_response_id`, so each tool output is
screened the first time it is sent. The calls it answers arrived in the provider's events
on the same connection, so the connection remembers them and pairs outputs with them.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gate import runs
from gate.audit.records import Response
from gate.audit.store import AuditStore
from gate.audit.usage import UsageTap
from gate.providers import openai_responses
from gate.proxy.pipeline import Origin
from gate.proxy.recorder import complete
from gate.proxy.routing import Route

_DONE = ("response.completed", "response.failed", "response.incomplete", "response.done")


def screenable(upgrade: str, path: str) -> bool:
    return upgrade.lower() == "websocket" and openai_responses.matches(path)


def error_event(message: str) -> bytes:
    """An error event in the shape Responses streams use (and the SDKs' error shape)."""
    return json.dumps(
        {
            "type": "error",
            "code": "gate_blocked",
            "message": message,
            "param": None,
            "error": {"type": "gate_error", "code": "gate_blocked", "message": message},
        }
    ).encode()


@dataclass(kw_only=True)
class Connection:
    route: Route
    run: runs.Run | None
    agent: str | None
    calls: dict[str, tuple[str, Mapping[str, Any]]] = field(default_factory=dict)
    row: int | None = None
    user: str | None = None  # who opened it, on a shared gate
    # One WebSocket carries one conversation: its frames are one session in the audit.
    session: str = field(default_factory=lambda: "w:" + os.urandom(8).hex())
    # Held while one message is read or screened: the next waits (gate/proxy/addon.py).
    turn: asyncio.Lock = field(default_factory=asyncio.Lock, repr=False, compare=False)

    def origin(self) -> Origin:
        return Origin(
            route=self.route,
            run=self.run,
            agent=self.agent,
            session=self.session,
            user=self.user,
            method="WS",
        )

    def known(self, previous: str) -> Mapping[str, tuple[str, Mapping[str, Any]]]:
        """The calls a frame's outputs may answer: every call the provider made on this
        connection (a frame's `previous_response_id` names a response of it)."""
        return self.calls

    def from_server(self, content: bytes, audit: AuditStore) -> None:
        """Remember the calls the model makes; put a finished response's usage in the audit."""
        if b'"type"' not in content:
            return
        try:
            event = json.loads(content)
        except ValueError:
            return
        kind = event.get("type") if isinstance(event, dict) else None
        if kind == "response.output_item.done":
            self._remember(event.get("item"))
        elif kind in _DONE and self.row is not None:
            tap = UsageTap("text/event-stream")
            tap.feed(b"data: " + content + b"\n")
            status = 200 if kind == "response.completed" else 500
            complete(audit, self.row, Response(status=status, latency_ms=0.0, usage=tap.finish()))

    def _remember(self, item: Any) -> None:
        if (call := openai_responses.call_of(item)) is not None:
            self.calls[call[0]] = (call[1], call[2])
