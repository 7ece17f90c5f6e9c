"""Responses stream through unbuffered: the first event arrives while the upstream still writes."""

from __future__ import annotations

import time

import httpx2 as httpx

from fake_provider import FakeProvider
from gate.proxy.server import Listening


def test_first_event_arrives_before_the_upstream_finishes(
    gate: Listening, provider: FakeProvider
) -> None:
    provider.sse_delay = 0.15  # ~11 events: the stream takes well over a second
    body = {
        "model": "claude-test",
        "max_tokens": 8,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    first_event_at = None
    events = []
    with httpx.stream(
        "POST",
        f"{gate.base_url}/anthropic/v1/messages",
        json=body,
        headers={"x-api-key": "k"},
        timeout=30,
    ) as resp:
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line.startswith("event:"):
                events.append(line.split(":", 1)[1].strip())
                if first_event_at is None:
                    first_event_at = time.monotonic()
                    assert provider.streams_finished == []  # the upstream is still writing
    assert first_event_at is not None
    assert provider.streams_finished and provider.streams_finished[0] - first_event_at > 1.0
    assert events[:2] == ["message_start", "ping"]  # pings are relayed too
    assert events[-1] == "message_stop"
