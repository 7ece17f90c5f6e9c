"""Wire formats: one module per provider format, turning a body into segments and back.

Each format module has the same surface, so the screening code is written once:
`FORMAT`, `matches(path)`, `walk(body) -> Walk`, `withhold_result(body, path, text)` and
`error_body(message, status)`.
"""

from __future__ import annotations

from types import ModuleType

from gate.providers import anthropic, gemini, openai_chat, openai_responses

# Order matters only where paths could overlap; each format matches its own endpoints.
FORMATS: tuple[ModuleType, ...] = (anthropic, openai_responses, openai_chat, gemini)


def detect(path: str) -> ModuleType | None:
    """The format a request path speaks, or None for endpoints gate does not know."""
    for fmt in FORMATS:
        if fmt.matches(path):
            return fmt
    return None
