"""A rule: `Tool(specifier)` with its effect, the file:line it came from and how it matches."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache

_RULE = re.compile(r"^(?P<tool>[A-Za-z_*][A-Za-z0-9_*.-]*)(?:\((?P<spec>.*)\))?$", re.S)
# Claude Code's tool names; a rule naming one in another case is a typo that would never match.
KNOWN_TOOLS = frozenset(
    {
        "Read",
        "Edit",
        "Write",
        "MultiEdit",
        "NotebookEdit",
        "NotebookRead",
        "Glob",
        "Grep",
        "LS",
        "Bash",
        "PowerShell",
        "Monitor",
        "WebFetch",
        "WebSearch",
        "Agent",
        "Task",
        "Skill",
        "TodoWrite",
        "Cd",
        "LSP",
        "REPL",
    }
)
# Input parameters of Claude Code's Bash tool: `Bash(run_in_background:true)` names one of
# these; any other `Bash(x:y)` is a command pattern (`Bash(git:*)` is the legacy prefix form).
BASH_PARAMS = frozenset(
    {"run_in_background", "timeout", "description", "dangerouslyDisableSandbox"}
)
# A `Tool(param:value)` rule cannot target the field the tool's own specifier matches.
_PRIMARY = frozenset({"command", "file_path", "notebook_path", "path", "url"})
_PARAM = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*):(?P<value>.+)$", re.S)
# Claude Code accepts these path rules but never consults them; gate does the same.
_UNCONSULTED = frozenset(
    {"Write", "MultiEdit", "NotebookEdit", "NotebookRead", "Glob", "Grep", "LS"}
)


class Effect(StrEnum):
    DENY = "deny"
    ASK = "ask"
    ALLOW = "allow"


class SecretAction(StrEnum):
    """What happens to a likely secret (a rule file's `secrets:` values), from most to least
    protective: the order is the order of strictness."""

    BLOCK = "block"
    ASK = "ask"
    REDACT = "redact"
    ALLOW = "allow"


class Kind(StrEnum):
    """How a rule matches a tool call."""

    PATH = "path"  # Read(...), Edit(...): the paths the call touches
    COMMAND = "command"  # Bash(...): every shell tool's command, part by part
    DOMAIN = "domain"  # WebFetch(domain:...): the host of every fetch tool's URL
    NAME = "name"  # a bare tool name, mcp__server, or a tool-name glob
    PARAM = "param"  # Tool(param:value): one of the call's inputs
    UNENFORCED = "unenforced"  # loads (a team's rules work unchanged), matches nothing


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    effect: Effect
    tool: str
    specifier: str | None
    source: str  # the file it came from, as shown to the user
    line: int  # 1-based
    root: str | None  # what `/pattern` is relative to: the rule file's root
    unless: tuple[str, ...] = ()
    layer: str = ""  # managed, user, pack, project, claude-user, ...

    @property
    def text(self) -> str:
        return self.tool if self.specifier is None else f"{self.tool}({self.specifier})"

    @property
    def where(self) -> str:
        return f"{self.source}:{self.line}"

    @property
    def kind(self) -> Kind:
        return kind_of(self.tool, self.specifier)

    @property
    def unenforced(self) -> str | None:
        """Why gate does not enforce this rule at the wire, or None when it does."""
        return unenforced_reason(self.tool, self.specifier)


def parse(text: str) -> tuple[str, str | None]:
    """Split `Tool(specifier)`; raise ValueError saying what to write instead."""
    m = _RULE.match(text.strip())
    if not m:
        raise ValueError(
            f"{text!r} is not a rule: write Tool or Tool(specifier), e.g. Read(./.env)"
            " or Bash(curl *)"
        )
    tool, spec = m.group("tool"), m.group("spec")
    typo = {t.lower(): t for t in KNOWN_TOOLS}.get(tool.lower())
    if typo and typo != tool:
        raise ValueError(f"{text!r}: tool names are case-sensitive; write {typo}(...)")
    # A misspelt tool name would never match: a deny rule that silently protects nothing.
    if (
        tool not in KNOWN_TOOLS
        and "*" not in tool
        and not tool.startswith("mcp__")
        and (close := difflib.get_close_matches(tool, KNOWN_TOOLS, n=1, cutoff=0.75))
    ):
        raise ValueError(f"{text!r}: unknown tool {tool!r}; did you mean {close[0]}?")
    if spec is not None and not spec.strip():
        raise ValueError(
            f"{text!r} has an empty specifier: write {tool} alone to match every use of the tool"
        )
    if "*" in tool and spec is not None:
        raise ValueError(f"{text!r}: a tool-name pattern takes no specifier; write {tool}")
    spec = None if spec is None else spec.strip()
    if (
        spec is not None
        and tool in KNOWN_TOOLS
        and tool not in ("Read", "Edit")
        and (p := _param(tool, spec)) in _PRIMARY
    ):
        raise ValueError(
            f"{text!r}: {tool}({p}:...) cannot match the tool's main input; write"
            f" {tool}(pattern) instead"
        )
    return tool, spec


def is_allowable_glob(tool: str) -> bool:
    """An allow rule's tool-name glob must start with a literal `mcp__<server>__`."""
    return bool(re.match(r"^mcp__.+?__", tool.split("*", 1)[0]))


@lru_cache(maxsize=4096)
def kind_of(tool: str, spec: str | None) -> Kind:
    if tool in ("Read", "Edit"):
        return Kind.PATH
    if spec is None:
        if tool == "Bash":
            return Kind.COMMAND
        return Kind.DOMAIN if tool == "WebFetch" else Kind.NAME
    if tool == "WebFetch":
        return Kind.DOMAIN if spec.startswith("domain:") else Kind.UNENFORCED
    if tool == "Bash":
        return Kind.PARAM if _param(tool, spec) else Kind.COMMAND
    if tool in _UNCONSULTED or _param(tool, spec) is None:
        return Kind.UNENFORCED
    return Kind.PARAM


def unenforced_reason(tool: str, spec: str | None) -> str | None:
    kind = kind_of(tool, spec)
    if kind is not Kind.UNENFORCED:
        return None
    if tool == "WebFetch":
        return "gate matches fetches by host only: write WebFetch(domain:example.com)"
    if tool in _UNCONSULTED:
        return (
            f"Claude Code does not consult {tool}(...) path rules either: write Read(...)"
            " or Edit(...)"
        )
    return f"gate does not match {tool}(...) specifiers at the wire yet"


def _param(tool: str, spec: str) -> str | None:
    """The parameter a `Tool(param:value)` specifier names, or None if it is not one."""
    m = _PARAM.match(spec)
    if not m or (tool == "Bash" and m.group("value").endswith("*")):
        return None
    name = m.group("name")
    if tool == "Bash":
        return name if name in BASH_PARAMS else None
    return name
