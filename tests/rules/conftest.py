"""Fixtures for rule tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from loguru import logger


@pytest.fixture
def log_lines() -> Iterator[list[str]]:
    """gate's log messages while the test runs."""
    lines: list[str] = []
    sink = logger.add(
        lambda m: lines.append(str(m).rstrip("\n")), level="DEBUG", format="{level} {message}"
    )
    yield lines
    logger.remove(sink)
