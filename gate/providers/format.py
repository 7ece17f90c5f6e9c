"""What every wire format module provides, so the screening code is written once for all."""

from __future__ import annotations

from typing import Any, Protocol

from gate.providers.segments import JsonPath, Walk


class Format(Protocol):
    """A wire format: a module (anthropic.py, openai_chat.py, ...) satisfies it as it is."""

    FORMAT: str  # its name, as the audit and the verdict record it

    def matches(self, path: str) -> bool:
        """Whether a request path is one of this format's endpoints."""
        ...

    def walk(self, body: dict[str, Any]) -> Walk:
        """Every outbound string with its role, and tool calls paired with their results;
        raises ValueError for a body this format cannot read."""
        ...

    def withhold_result(self, body: dict[str, Any], result: JsonPath, placeholder: str) -> None:
        """Replace the tool result at `result` in place with `placeholder`."""
        ...

    def error_body(self, message: str, status: int = 403) -> dict[str, Any]:
        """An error as this provider writes one, so the agent shows `message`."""
        ...
