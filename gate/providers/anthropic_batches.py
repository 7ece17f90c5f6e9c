"""Anthropic Message Batches (`/v1/messages/batches`): each request's `params` walked as Messages.

A batch carries many conversations under another URL; left to the every-string screen,
its tool results would be screened for content but no tool rule would look at them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from gate.providers import anthropic
from gate.providers.paths import normalise
from gate.providers.segments import Segment, ToolCall, Walk

FORMAT = "anthropic-batch"


def matches(path: str) -> bool:
    return normalise(path).endswith("/v1/messages/batches")


def walk(body: dict[str, Any]) -> Walk:
    """Every request's Messages walk, its paths under `requests[i].params` and its call ids
    made distinct per request (two conversations may both have a `toolu_1`)."""
    requests = body.get("requests")
    if not isinstance(requests, list):
        raise ValueError("a batch's requests is not a list")
    segs: list[Segment] = []
    calls: list[ToolCall] = []
    model = None
    for i, request in enumerate(requests):
        params = request.get("params") if isinstance(request, dict) else None
        if not isinstance(params, dict):
            raise ValueError(f"requests[{i}].params is not an object")
        at = ("requests", i, "params")
        inner = anthropic.walk(params)
        model = model or inner.model
        segs += (
            replace(
                s,
                path=(*at, *s.path),
                call_id=f"{i}:{s.call_id}" if s.call_id is not None else None,
            )
            for s in inner.segments
        )
        calls += (
            replace(c, id=f"{i}:{c.id}", result=(*at, *c.result) if c.result is not None else None)
            for c in inner.calls
        )
    return Walk(format=FORMAT, model=model, segments=tuple(segs), calls=tuple(calls))


withhold_result = anthropic.withhold_result
error_body = anthropic.error_body
