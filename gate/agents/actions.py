"""What a tool call does, in the rules' terms."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Verb(StrEnum):
    READ = "Read"
    EDIT = "Edit"
    SEARCH = "Search"
    EXEC = "Exec"
    FETCH = "Fetch"
    TOOL = "Tool"  # anything else: matched by tool name only


@dataclass(frozen=True, slots=True, kw_only=True)
class Action:
    verb: Verb
    tool: str
    target: str | None  # a path, a command or a URL; None when the tool has none
    reads: tuple[str, ...] = ()  # for commands: absolute paths the command may read
    # The call's short scalar inputs (name, text), for Tool(param:value) rules.
    params: tuple[tuple[str, str], ...] = ()
    # Its target cannot be known (arguments that do not parse, a command built at run time,
    # a result whose call gate never saw): every deny or ask rule for its verb applies.
    unknown: bool = False

    def describe(self, path: str | None = None) -> str:
        if self.verb is Verb.EXEC and path:
            return f"{self.tool} command {self.target!r} reads {path}, which"
        shown = path or self.target
        return f"{self.tool} of {shown}" if shown else self.tool
