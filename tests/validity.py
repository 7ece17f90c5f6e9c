"""What a rewritten body must keep: every call and result, ids, order, immutable fields."""

from __future__ import annotations

from typing import Any

from gate import providers
from gate.providers.segments import Role


def check_rewrite(path: str, before: Any, after: Any) -> None:
    """Assert `after` is `before` with only tool-result content replaced."""
    fmt = providers.detect(path)
    assert fmt is not None, path
    w0, w1 = fmt.walk(before), fmt.walk(after)
    assert [(c.id, c.name, c.result) for c in w0.calls] == [
        (c.id, c.name, c.result) for c in w1.calls
    ], "calls, ids or result positions changed"
    assert [s.path for s in w0.segments if s.role is not Role.TOOL_RESULT] == [
        s.path for s in w1.segments if s.role is not Role.TOOL_RESULT
    ], "blocks moved"
    changed = {s.path: s.text for s in w0.segments if s.role is not Role.TOOL_RESULT}
    for seg in w1.segments:
        if seg.role is not Role.TOOL_RESULT:
            assert changed[seg.path] == seg.text, f"{seg.role} at {seg.path} was edited"
    _same_shape(before, after, ())


def _same_shape(a: Any, b: Any, at: tuple[object, ...]) -> None:
    """Same keys in the same order everywhere outside replaced result content."""
    if isinstance(a, dict) and isinstance(b, dict):
        assert list(a) == list(b), f"keys changed at {at}"
        for k in a:
            if k not in ("content", "output", "response", "text"):
                _same_shape(a[k], b[k], (*at, k))
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"length changed at {at}"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _same_shape(x, y, (*at, i))
