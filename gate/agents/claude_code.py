"""Claude Code: its tools as actions, its project root from the system prompt, its wiring."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from gate.agents import shell
from gate.agents.actions import Action, Verb

NAME = "claude-code"
COMMANDS = ("claude",)
BASE_URL_ENV = "ANTHROPIC_BASE_URL"

# Tool name → (verb, input key holding its target). Input keys from sdk-tools.d.ts.
_TOOLS: Mapping[str, tuple[Verb, str]] = {
    "Read": (Verb.READ, "file_path"),
    "NotebookRead": (Verb.READ, "notebook_path"),
    "Write": (Verb.EDIT, "file_path"),
    "Edit": (Verb.EDIT, "file_path"),
    "MultiEdit": (Verb.EDIT, "file_path"),
    "NotebookEdit": (Verb.EDIT, "notebook_path"),
    "Grep": (Verb.SEARCH, "path"),
    "Glob": (Verb.SEARCH, "path"),
    "LS": (Verb.SEARCH, "path"),
    "Bash": (Verb.EXEC, "command"),
    "Monitor": (Verb.EXEC, "command"),
    "PowerShell": (Verb.EXEC, "command"),
    "WebFetch": (Verb.FETCH, "url"),
}
# Search tools default to the working directory when no path is given.
_DEFAULTS_TO_CWD = frozenset({"Grep", "Glob", "LS"})

_CWD_PATTERNS = (
    re.compile(r"^\s*-?\s*Primary working directory:\s*(.+?)\s*$", re.M),
    re.compile(r"^\s*Working directory:\s*(.+?)\s*$", re.M),
    re.compile(r"^CWD:\s*(.+?)\s*$", re.M),
)


def action(name: str, tool_input: Mapping[str, Any], cwd: str | None) -> Action:
    """Map one tool call to an action; unknown tools become Verb.TOOL."""
    verb, key = _TOOLS.get(name, (Verb.TOOL, ""))
    target = tool_input.get(key) if key else None
    if not isinstance(target, str) or not target:
        target = cwd if name in _DEFAULTS_TO_CWD else None
    if verb is Verb.EXEC and target:
        return Action(verb, name, target, shell.reads(target, cwd))
    return Action(verb, name, target)


def project_root(system_texts: Iterable[str]) -> str | None:
    """The working directory Claude Code states in its system prompt, if any."""
    for text in system_texts:
        for pattern in _CWD_PATTERNS:
            if m := pattern.search(text):
                return m.group(1)
    return None
