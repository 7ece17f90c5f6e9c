"""The response side, driven with mitmproxy's test flows: what each hook records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mitmproxy.test import taddons, tflow, tutils

from gate.audit.records import RequestRow
from gate.audit.store import AuditStore
from gate.proxy import chains
from gate.proxy.recorder import ResponseRecorder


@pytest.fixture
def audit(tmp_path: Path) -> AuditStore:
    store = AuditStore(tmp_path / "audit.db")
    yield store
    store.close()


def _flow(audit: AuditStore) -> tflow.HTTPFlow:
    flow = tflow.tflow(
        resp=tutils.tresp(headers=((b"content-type", b"text/event-stream"),), content=b"")
    )
    flow.metadata["gate_row"] = audit.record_request(
        RequestRow(
            upstream="anthropic",
            host="127.0.0.1",
            method="POST",
            path="/v1/messages",
            request_bytes=2,
            verdict="forwarded",
            withheld=[],
            body=b"{}",
        ),
    )
    return flow


def _sse(event: str, data: dict[str, object]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


START = _sse(
    "message_start",
    {"type": "message_start", "message": {"usage": {"input_tokens": 1234, "output_tokens": 1}}},
)


@pytest.mark.parametrize("client_closes", [False, True])
def test_usage_is_recorded_whether_the_stream_ends_or_the_client_leaves(
    audit: AuditStore, client_closes: bool
) -> None:
    recorder = ResponseRecorder(audit, chains.ResponseCalls())
    flow = _flow(audit)
    with taddons.context(recorder):
        recorder.responseheaders(flow)
        relay = flow.response.stream
        assert callable(relay)
        assert relay(START) == START  # relayed untouched
        if client_closes:
            flow.error = tflow.terr("client disconnected")
            recorder.error(flow)
        else:
            relay(_sse("message_delta", {"type": "message_delta", "usage": {"output_tokens": 56}}))
            recorder.response(flow)
    row = next(audit.rows(1))
    assert row["input_tokens"] == 1234
    assert row["output_tokens"] == (1 if client_closes else 56)
    assert (row["error"] == "client disconnected") is client_closes


@pytest.mark.parametrize("size", [1, 7, 64, 100_000])
def test_usage_is_read_however_the_stream_is_cut(audit: AuditStore, size: int) -> None:
    """The taps look only at the lines that hold their marker: a usage event cut across
    chunks (or many events in one chunk) is read all the same, and every byte relayed."""
    recorder = ResponseRecorder(audit, chains.ResponseCalls())
    flow = _flow(audit)
    text = _sse("content_block_delta", {"type": "content_block_delta", "delta": {"text": "x"}})
    end = _sse("message_delta", {"type": "message_delta", "usage": {"output_tokens": 77}})
    stream = START + text * 40 + end
    with taddons.context(recorder):
        recorder.responseheaders(flow)
        relay = flow.response.stream
        assert callable(relay)
        out = b"".join(relay(stream[i : i + size]) for i in range(0, len(stream), size))
        recorder.response(flow)
    assert out == stream
    row = next(audit.rows(1))
    assert (row["input_tokens"], row["output_tokens"]) == (1234, 77)
