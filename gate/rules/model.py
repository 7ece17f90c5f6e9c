"""A rule: `Tool(specifier)` with its effect and the file:line it came from."""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

_RULE = re.compile(
    r"^(?P<tool>[A-Za-z_][A-Za-z0-9_]*|mcp__[A-Za-z0-9_*-]+)(?:\((?P<spec>.*)\))?$", re.S)
# Claude Code's tool names; a rule naming one in another case is a typo that would never match.
KNOWN_TOOLS = frozenset({
    "Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "NotebookRead", "Glob", "Grep", "LS",
    "Bash", "PowerShell", "Monitor", "WebFetch", "WebSearch", "Agent", "Task", "Skill",
    "TodoWrite", "Cd", "LSP", "REPL",
})
# Rules gate enforces at the wire today; others load (a team's Claude Code rules work
# unchanged) and are reported as not enforced by gate yet.
ENFORCED_TOOLS = frozenset({"Read", "Edit"})


class Effect(StrEnum):
    DENY = "deny"
    ASK = "ask"
    ALLOW = "allow"


@dataclass(frozen=True, slots=True)
class Rule:
    effect: Effect
    tool: str
    specifier: str | None
    source: str           # the file it came from, as shown to the user
    line: int             # 1-based
    root: str | None      # what `/pattern` is relative to: the rule file's root
    unless: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"


def parse(text: str) -> tuple[str, str | None]:
    """Split `Tool(specifier)`; raise ValueError saying what to write instead."""
    m = _RULE.match(text.strip())
    if not m:
        raise ValueError(
            f"{text!r} is not a rule: write Tool or Tool(specifier), e.g. Read(./.env)"
            " or Bash(curl *)"
        )
    spec = m.group("spec")
    typo = {t.lower(): t for t in KNOWN_TOOLS}.get(m.group("tool").lower())
    if typo and typo != m.group("tool"):
        raise ValueError(f"{text!r}: tool names are case-sensitive; write {typo}(...)")
    if spec is not None and not spec.strip():
        raise ValueError(f"{text!r} has an empty specifier: write {m.group('tool')} alone to"
                         " match every use of the tool")
    return m.group("tool"), None if spec is None else spec.strip()
