"""Every agent whose history gate reads, by name."""

from __future__ import annotations

from gate.history import (
    aider,
    claude_code,
    codex,
    copilot,
    cursor,
    gemini_cli,
    hermes,
    opencode,
)
from gate.history.model import Agent
from gate.history.readers import Reader

READERS: dict[Agent, Reader] = {
    r.agent: r
    for r in (
        claude_code.READER,
        codex.READER,
        cursor.READER,
        opencode.READER,
        copilot.READER,
        hermes.READER,
        gemini_cli.READER,
        aider.READER,
    )
}
