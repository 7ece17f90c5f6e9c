"""Fixtures: `asking` (shared with tests/ask) starts a gate that parks requests and asks;
`watch` runs `gate watch` on a pseudo-terminal."""

from collections.abc import Iterator

import pytest

from ask.conftest import asking
from decisions.term import Term

__all__ = ["asking", "watch"]


@pytest.fixture
def watch() -> Iterator[Term]:
    t = Term("watch", "--interval", "0.2")
    yield t
    t.close()
