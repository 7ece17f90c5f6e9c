"""Fixtures shared with tests/ask: `asking` starts a gate that parks requests and asks."""

from ask.conftest import asking

__all__ = ["asking"]
