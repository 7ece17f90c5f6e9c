"""Responses over WebSocket (Codex's built-in provider): screen each frame the agent sends.

Later frames carry only new items plus `previous_response_id`, so each tool output is
screened the first time it is sent. The calls it answers arrived in the provider's events
on the same connection, so the connection remembers them and pairs outputs with them.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from gate import runs
from gate.audit.records import Response
from gate.audit.store import AuditStore
from gate.audit.usage import UsageTap
from gate.providers import openai_responses
from gate.proxy.pipeline import Origin, question_info
from gate.proxy.recorder import complete
from gate.proxy.routing import Route
from gate.rules.layers import PolicyStore
from gate.screen.codec import Ambiguous
from gate.screen.request import (
    Blocked,
    Outbound,
    Screens,
    Verdict,
    dump,
    parse,
    screen_object,
    screen_strings,
)

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

    def from_client(
        self,
        content: bytes,
        is_text: bool,
        policies: PolicyStore,
        screens: Screens,
        settle: Callable[[Verdict, dict[str, Any]], Verdict],
        record: Callable[[Origin, Verdict, bytes, bool], int],
    ) -> bytes | None:
        """The frame to send instead (None: send it unchanged). Raises to block it.

        A frame cannot be parked while a person is asked (the connection carries the
        whole turn), so `settle` applies ask findings' default at once. `record` writes
        its audit row as an HTTP request's is written (gate/proxy/pipeline.py)."""
        if not is_text:
            raise Blocked("gate cannot screen a binary WebSocket message")
        try:
            frame = parse(content)
        except Ambiguous as exc:  # JSON with two meanings: which key, as an HTTP body's says
            raise Blocked(f"gate cannot screen this message: {exc}") from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise Blocked("gate cannot screen this message: it is not JSON") from exc
        if not isinstance(frame, dict):
            raise Blocked("gate cannot screen this message: it is not a JSON object")
        req = Outbound(
            path=self.route.path,
            body=content,
            agent=self.agent,
            project_root=self.run.cwd if self.run else None,
            root=self.run.root if self.run else None,
            session=self.session,
        )
        if isinstance(frame.get("response"), dict):
            # The request sits under `response`; whatever else the frame carries is still
            # screened, as strings of no known format.
            verdict = screen_object(
                openai_responses, req, frame["response"], policies, self.calls, screens
            )
            rest = {k: v for k, v in frame.items() if k != "response"}
            extra = screen_strings(req, rest, policies, screens).withheld
            frame.update(rest)
            verdict = replace(verdict, withheld=verdict.withheld + extra)
        else:
            verdict = screen_object(openai_responses, req, frame, policies, self.calls, screens)
        origin = self.origin()
        if verdict.asks:
            verdict = settle(verdict, question_info(origin, verdict))
        sent = dump(frame) if verdict.withheld else content
        self.row = record(origin, verdict, sent, bool(verdict.withheld))
        return sent if verdict.withheld else None

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
