"""Wire formats: one module per provider format, turning a body into segments and back.

Each format module has the same surface (format.Format), so the screening code is written
once: `FORMAT`, `matches(path)`, `walk(body) -> Walk`, `withhold_result(body, path, text)` and
`error_body(message, status)`.
"""

from __future__ import annotations

from gate.providers import (
    anthropic,
    anthropic_batches,
    gemini,
    openai_assistants,
    openai_chat,
    openai_responses,
)
from gate.providers.format import Format

# Order matters only where paths could overlap; each format matches its own endpoints.
# Endpoints that carry conversation content under other URLs are walked as their format;
# anything else on a provider upstream still has every string screened.
FORMATS: tuple[Format, ...] = (
    anthropic,
    anthropic_batches,
    openai_responses,
    openai_chat,
    openai_assistants,
    gemini,
)


def detect(path: str) -> Format | None:
    """The format a request path speaks, or None for endpoints gate does not know."""
    for fmt in FORMATS:
        if fmt.matches(path):
            return fmt
    return None
