"""Stateful Responses over HTTP: the calls each response made, for outputs sent later.

With `previous_response_id` the call lives on the server and the next request carries only
its output. gate reads each response as it streams past (its id and the calls in its
output) so the output can be decided by the rules like a call paired in the body.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from gate.audit.lines import marked
from gate.providers import openai_responses
from gate.providers.openai_assistants import run_key
from gate.providers.segments import arguments

Calls = dict[str, tuple[str, Mapping[str, Any]]]


class ResponseCalls:
    """Response id → its calls, for the most recent responses (bounded)."""

    def __init__(self, size: int = 1024):
        self._size = size
        self._lock = threading.Lock()
        self._by_id: OrderedDict[str, Calls] = OrderedDict()

    def record(self, response_id: str, calls: Calls) -> None:
        with self._lock:
            self._by_id[response_id] = calls
            while len(self._by_id) > self._size:
                self._by_id.popitem(last=False)

    def known(self, response_id: str) -> Calls:
        with self._lock:
            return dict(self._by_id.get(response_id, {}))


class CallsTap:
    """Reads a Responses reply for its id and calls: SSE events as they stream past, or a
    JSON body at the end (the one the usage tap kept; it is not buffered twice)."""

    def __init__(self) -> None:
        self._pending = b""
        self.response_id: str | None = None
        self.calls: Calls = {}

    def feed(self, chunk: bytes) -> None:
        lines, self._pending = marked(
            self._pending, chunk, (b"output_item.done", b"response.created")
        )
        for line in lines:
            if line.startswith(b"data:"):
                self._event(line[5:])

    def read_json(self, raw: str | bytes) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            return
        if isinstance(body, dict):
            self.response_id = body.get("id") if isinstance(body.get("id"), str) else None
            for item in body.get("output") or ():
                self._remember(item)

    def _event(self, data: bytes) -> None:
        try:
            event = json.loads(data)
        except ValueError:
            return
        if not isinstance(event, dict):
            return
        if event.get("type") == "response.created" and isinstance(event.get("response"), dict):
            rid = event["response"].get("id")
            self.response_id = rid if isinstance(rid, str) else None
        elif event.get("type") == "response.output_item.done":
            self._remember(event.get("item"))

    def _remember(self, item: Any) -> None:
        if (call := openai_responses.call_of(item)) is not None:
            self.calls[call[0]] = (call[1], call[2])


class RunCallsTap:
    """Reads an Assistants reply for the run objects in it (a run, a list of runs, or SSE
    `thread.run.*` events) and the tool calls each one's `required_action` asks for."""

    def __init__(self) -> None:
        self._pending = b""
        self.runs: dict[str, Calls] = {}

    def feed(self, chunk: bytes) -> None:
        lines, self._pending = marked(self._pending, chunk, (b"required_action",))
        for line in lines:
            if line.startswith(b"data:"):
                self.read_json(line[5:])

    def read_json(self, raw: str | bytes) -> None:
        try:
            body = json.loads(raw)
        except ValueError:
            return
        items = (
            body.get("data") if isinstance(body, dict) and body.get("object") == "list" else [body]
        )
        for run in items if isinstance(items, list) else ():
            self._remember(run)

    def _remember(self, run: Any) -> None:
        if not isinstance(run, dict) or run.get("object") != "thread.run":
            return
        thread, rid = run.get("thread_id"), run.get("id")
        action = run.get("required_action")
        asked = action.get("submit_tool_outputs") if isinstance(action, dict) else None
        tool_calls = asked.get("tool_calls") if isinstance(asked, dict) else None
        if not (isinstance(thread, str) and isinstance(rid, str) and isinstance(tool_calls, list)):
            return
        calls: Calls = {}
        for call in tool_calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(call.get("id"), str):
                calls[call["id"]] = (str(fn.get("name")), arguments(fn.get("arguments")))
        self.runs[run_key(thread, rid)] = calls
