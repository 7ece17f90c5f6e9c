"""What a history scan works on: stores, the strings in them, and what it finds there."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path


class Agent(StrEnum):
    CLAUDE_CODE = "claude-code"
    CODEX = "codex"
    CURSOR = "cursor"
    OPENCODE = "opencode"
    COPILOT = "copilot"
    HERMES = "hermes"
    GEMINI_CLI = "gemini-cli"
    AIDER = "aider"


class Form(StrEnum):
    """How a store is laid out on disk, which decides how it is read and rewritten."""

    JSONL = "jsonl"  # one JSON object per line
    JSON = "json"  # one JSON document
    SQLITE = "sqlite"  # a database (its WAL too)
    TEXT = "text"  # plain text: markdown logs, prompt logs, file backups
    YAML = "yaml"  # a small YAML file of plain scalars (Copilot's workspace.yaml)


class Place(StrEnum):
    """Where in the conversation a string sat (public ids: written to --json output)."""

    USER_TEXT = "user-text"
    ASSISTANT_TEXT = "assistant-text"
    TOOL_INPUT = "tool-input"
    TOOL_RESULT = "tool-result"
    FILE_BACKUP = "file-backup"
    PROMPT_LOG = "prompt-log"
    SYSTEM = "system"
    METADATA = "metadata"


@dataclass(frozen=True, slots=True, kw_only=True)
class Store:
    """One file an agent writes, with what is known of its session before reading it."""

    agent: Agent
    path: Path
    form: Form
    session: str | None = None
    project: str | None = None
    title: str | None = None
    place: Place | None = None  # for a store that is all one kind (a prompt log, a backup)


@dataclass(frozen=True, slots=True, kw_only=True)
class Where:
    """What a reader knows about one string: its position and its part in the conversation."""

    at: str  # "line 12 $.message.content[0].content", "part row 31 data"
    place: Place
    tool: str | None = None
    session: str | None = None
    project: str | None = None
    title: str | None = None
    ts: float | None = None  # seconds since the epoch


@dataclass(frozen=True, slots=True, kw_only=True)
class Finding:
    """One secret or denied-file value in one string of one store (never the value)."""

    agent: Agent
    store: Path
    where: Where
    kind: str  # detector kind, or "denied-file"
    rule: str  # detector id, or the deny rule's text
    tier: str  # high | low | denied
    digest: str  # keyed hash of the value: groups copies of one secret
    preview: str  # first and last characters, the middle masked
    replacement: str  # the wire's placeholder for it
    source: str | None = None  # for a denied-file value: the file it came from
