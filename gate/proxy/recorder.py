"""The response side of the gate addon: relay each response untouched as it streams, and
complete the request's audit row (status, latency, token usage) and the Responses chain."""

from __future__ import annotations

import time

from loguru import logger
from mitmproxy import http
from mitmproxy.net import encoding

from gate.audit.records import Response, Usage
from gate.audit.store import AuditStore
from gate.audit.usage import UsageTap
from gate.providers import openai_assistants, openai_responses
from gate.proxy import chains, handed_back, replies, routing


class ResponseRecorder:
    """Works on the flows the request side recorded (`gate_row` in the flow's metadata)."""

    def __init__(self, audit: AuditStore, calls: chains.ResponseCalls):
        self.audit = audit
        self.chains = calls

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        if "gate_row" not in flow.metadata or flow.response is None:
            return
        route: routing.Route | None = flow.metadata.get("gate_route")
        at = flow.metadata.get("gate_base")
        # Fail closed: an upload session URL gate cannot point at itself never reaches the
        # client (the reply is held back whole and replaced in `response`).
        if (
            route is not None
            and at is not None
            and (refused := handed_back.rewrite(flow.response.headers, route.upstream, at))
        ):
            flow.metadata["gate_handed_back"] = refused
            return
        kind = flow.response.headers.get("content-type", "")
        tap = UsageTap(kind)
        flow.metadata["gate_tap"] = tap
        sse = kind.startswith("text/event-stream")
        responses = route is not None and openai_responses.matches(route.path)
        calls: chains.CallsTap | chains.RunCallsTap | None = (
            chains.CallsTap() if responses else None
        )
        if route is not None and openai_assistants.runs(route.path):
            calls = chains.RunCallsTap()  # the calls a run asks outputs for
        stream_calls = calls if sse else None
        flow.metadata["gate_calls"] = calls

        def relay(chunk: bytes) -> bytes:
            tap.feed(chunk)
            if stream_calls is not None:
                stream_calls.feed(chunk)
            return chunk

        # Streaming untouched: every chunk is relayed as it arrives, tee'd to the usage tap.
        flow.response.stream = relay

    def response(self, flow: http.HTTPFlow) -> None:
        row = flow.metadata.get("gate_row")
        if row is None or flow.response is None:
            return
        if (refused := flow.metadata.get("gate_handed_back")) is not None:
            logger.warning("flow {}: reply withheld: {}", flow.id, "upload URL off the route")
            route: routing.Route | None = flow.metadata.get("gate_route")
            name = route.upstream.name if route else ""
            flow.response = http.Response.make(
                502,
                replies.error(name, route.path if route else "", 502, f"gate: {refused}"),
                {"content-type": "application/json"},
            )
            self._finish(row, flow, 502, Usage(), refused)
            return
        tap: UsageTap | None = flow.metadata.get("gate_tap")
        enc = flow.response.headers.get("content-encoding")
        usage = _usage(flow)
        calls: chains.CallsTap | chains.RunCallsTap | None = flow.metadata.get("gate_calls")
        if calls is not None:
            try:
                if tap is not None and (raw := tap.body) is not None:
                    calls.read_json(encoding.decode(raw, enc) if enc else raw)
                if isinstance(calls, chains.RunCallsTap):
                    for key, asked in calls.runs.items():
                        self.chains.record(key, asked)
                elif calls.response_id and calls.calls:
                    self.chains.record(calls.response_id, calls.calls)
            except Exception as exc:  # the next output is then screened by content only
                logger.warning("flow {}: response calls not read ({})", flow.id, type(exc).__name__)
        self._finish(row, flow, flow.response.status_code, usage, None)

    def error(self, flow: http.HTTPFlow) -> None:
        row = flow.metadata.get("gate_row")
        if row is not None:
            msg = flow.error.msg if flow.error else "unknown error"
            status = flow.response.status_code if flow.response else None
            # A client that closes the stream first still consumed the tokens streamed so
            # far: the usage the tap saw is recorded with the error.
            self._finish(row, flow, status, _usage(flow), msg)

    def _finish(
        self, row: int, flow: http.HTTPFlow, status: int | None, usage: Usage, error: str | None
    ) -> None:
        t0 = flow.metadata.get("gate_t0", time.monotonic())
        latency_ms = (time.monotonic() - t0) * 1000
        complete(
            self.audit,
            row,
            Response(status=status, latency_ms=latency_ms, usage=usage, error=error),
        )


def complete(audit: AuditStore, row: int, response: Response) -> None:
    """Complete a request's row with its response: by the audit's background thread when
    it runs (written off the event loop), else now; a failure is logged, not raised."""
    worker = audit.worker
    if worker is not None and worker.is_alive():
        worker.record_response(row, response)
        return
    try:
        audit.record_response(row, response)
    except Exception as exc:
        logger.error("audit update failed for request {}: {}", row, type(exc).__name__)


def _usage(flow: http.HTTPFlow) -> Usage:
    """The token usage the response's tap saw (best effort: the row still gets its status)."""
    tap: UsageTap | None = flow.metadata.get("gate_tap")
    if tap is None or flow.response is None:
        return Usage()
    enc = flow.response.headers.get("content-encoding")
    try:
        return tap.finish(lambda raw: encoding.decode(raw, enc) if enc else raw)
    except Exception as exc:
        logger.warning("flow {}: usage not read ({})", flow.id, type(exc).__name__)
        return Usage()
