"""The `asking` fixture: gates that ask (the shared `gate` fixture never does)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from ask.ask_kit import AskingGate
from fake_provider import FakeProvider
from gate.config import AskConfig, Config, DecisionsConfig, parse_upstream
from gate.proxy.server import BackgroundGate


@pytest.fixture
def asking(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> Iterator[Callable[..., AskingGate]]:
    """Start a gate that asks: asking(timeout_seconds=..., default=..., mode=...)."""
    started: list[BackgroundGate] = []

    def start(record_dataset: bool = True, helper_url: str | None = None, **ask: Any) -> AskingGate:
        known = (str(gate_dirs["project"]),)  # as `gate serve --project` would
        config = replace(
            Config(),
            port=0,
            projects=known,
            ask=AskConfig(**ask),
            decisions=DecisionsConfig(record_dataset=record_dataset, helper_url=helper_url),
        ).with_upstreams({"anthropic": parse_upstream("anthropic", provider.url)})
        server = BackgroundGate(config, gate_dirs["data"])
        started.append(server)
        return AskingGate(server.start(), gate_dirs["data"], provider)

    yield start
    for server in started:
        server.stop()
