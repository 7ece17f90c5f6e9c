"""Claude Code: how `gate run` recognises and wires it (its tools live in agents/tools.py)."""

from __future__ import annotations

NAME = "claude-code"
COMMANDS = ("claude",)
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
