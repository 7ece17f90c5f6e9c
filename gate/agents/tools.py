"""Every agent's tools as actions, and the working directory each agent states in its prompt.

Tool names barely collide across agents, and where they do (`bash`, `glob`, `web_fetch`)
their inputs agree, so one table serves all of them: a request is decided the same way
whichever agent sent it, even when the agent was not recognised. Names and input keys come
from each agent's shipped tool schemas (../shared/reference/protocols.md §4).
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from gate.agents import shell
from gate.agents.actions import Action, Verb
from gate.providers.segments import UNPARSED, UNSEEN

# Tool name → (verb, input keys that may hold its target, first present wins).
TOOLS: Mapping[str, tuple[Verb, tuple[str, ...]]] = {
    # Claude Code
    "Read": (Verb.READ, ("file_path",)),
    "NotebookRead": (Verb.READ, ("notebook_path",)),
    "Write": (Verb.EDIT, ("file_path",)),
    "Edit": (Verb.EDIT, ("file_path",)),
    "MultiEdit": (Verb.EDIT, ("file_path",)),
    "NotebookEdit": (Verb.EDIT, ("notebook_path",)),
    "Grep": (Verb.SEARCH, ("path",)),
    "Glob": (Verb.SEARCH, ("path",)),
    "LS": (Verb.SEARCH, ("path",)),
    "Bash": (Verb.EXEC, ("command",)),
    "Monitor": (Verb.EXEC, ("command",)),
    "PowerShell": (Verb.EXEC, ("command",)),
    "WebFetch": (Verb.FETCH, ("url",)),
    # Codex CLI
    "exec_command": (Verb.EXEC, ("cmd", "command")),
    "shell_command": (Verb.EXEC, ("command",)),
    "shell": (Verb.EXEC, ("command",)),
    "local_shell": (Verb.EXEC, ("command",)),
    "view_image": (Verb.READ, ("path",)),
    # OpenCode
    "read": (Verb.READ, ("filePath", "file_path", "path")),
    "write": (Verb.EDIT, ("filePath", "file_path", "path")),
    "edit": (Verb.EDIT, ("filePath", "file_path", "path")),
    "bash": (Verb.EXEC, ("command",)),
    "grep": (Verb.SEARCH, ("path", "paths")),
    "glob": (Verb.SEARCH, ("path", "paths", "dir_path")),
    "list": (Verb.SEARCH, ("path",)),
    "webfetch": (Verb.FETCH, ("url",)),
    # Gemini CLI
    "read_file": (Verb.READ, ("file_path", "absolute_path", "path")),
    "read_many_files": (Verb.SEARCH, ("include", "paths")),
    "write_file": (Verb.EDIT, ("file_path",)),
    "replace": (Verb.EDIT, ("file_path",)),
    "list_directory": (Verb.SEARCH, ("dir_path", "path")),
    "grep_search": (Verb.SEARCH, ("dir_path", "path")),
    "search_file_content": (Verb.SEARCH, ("dir_path", "path")),
    "run_shell_command": (Verb.EXEC, ("command",)),
    "web_fetch": (Verb.FETCH, ("url", "prompt")),
    # GitHub Copilot CLI
    "view": (Verb.READ, ("path",)),
    "create": (Verb.EDIT, ("path",)),
    "str_replace": (Verb.EDIT, ("path",)),
    "str_replace_editor": (Verb.READ, ("path",)),  # view/create/edit: its result may show content
    "rg": (Verb.SEARCH, ("paths", "path")),
    # Codex: input sent to a running exec_command session is a command line too.
    "write_stdin": (Verb.EXEC, ("chars",)),
}
# The reference MCP filesystem server's tools, whatever the server is named
# (`mcp__fs__read_text_file` in Claude Code, `fs__read_text_file`, `fs_read_text_file`).
_MCP_FILES: Mapping[str, tuple[Verb, tuple[str, ...]]] = {
    "read_file": (Verb.READ, ("path",)),
    "read_text_file": (Verb.READ, ("path",)),
    "read_media_file": (Verb.READ, ("path",)),
    "read_multiple_files": (Verb.READ, ("paths",)),
    "write_file": (Verb.EDIT, ("path",)),
    "edit_file": (Verb.EDIT, ("path",)),
    "list_directory": (Verb.SEARCH, ("path",)),
    "list_directory_with_sizes": (Verb.SEARCH, ("path",)),
    "directory_tree": (Verb.SEARCH, ("path",)),
    "search_files": (Verb.SEARCH, ("path",)),
    "get_file_info": (Verb.SEARCH, ("path",)),
    "move_file": (Verb.EDIT, ("source", "destination")),
}
_MCP_SUFFIX = re.compile(
    r"(?:__|_|\.)(" + "|".join(sorted(_MCP_FILES, key=len, reverse=True)) + r")$"
)


def _mcp_tool(name: str) -> str:
    """The tool name an MCP server gave, behind the agent's `mcp__server__` prefix."""
    m = _MCP_SUFFIX.search(name)
    return m.group(1) if m else ""


# Search tools default to the working directory when no path is given.
_DEFAULTS_TO_CWD = frozenset(
    {
        "Grep",
        "Glob",
        "LS",
        "grep",
        "glob",
        "list",
        "grep_search",
        "search_file_content",
        "list_directory",
        "rg",
    }
)
# Input keys that set a shell command's working directory.
_WORKDIR_KEYS = ("workdir", "dir_path", "cwd", "working_directory")

_CWD_PATTERNS = (
    re.compile(r"^\s*-?\s*Primary working directory:\s*(.+?)\s*$", re.M),  # Claude Code
    re.compile(r"<cwd>\s*([^<]+?)\s*</cwd>"),  # Codex <environment_context>
    re.compile(r"^\s*Working directory:\s*(.+?)\s*$", re.M),  # Claude Code (old), OpenCode
    re.compile(r"^\s*\*?\s*Current working directory:\s*(.+?)\s*$", re.M),  # Copilot CLI
    re.compile(r"Workspace Directories:\**\s*\n\s*-\s*(/.+?)\s*$", re.M),  # Gemini CLI
    re.compile(r"^CWD:\s*(.+?)\s*$", re.M),  # Claude Code --bare
)


def action(name: str, tool_input: Mapping[str, Any], cwd: str | None) -> Action:
    """Map one tool call to an action; unknown tools become Verb.TOOL."""
    verb, keys = TOOLS.get(name) or _MCP_FILES.get(_mcp_tool(name), (Verb.TOOL, ()))
    if UNSEEN in tool_input or UNPARSED in tool_input:
        # Fail closed: a target gate cannot know is decided as the strictest one.
        return Action(
            verb=Verb.EXEC if verb is Verb.TOOL else verb, tool=name, target=None, unknown=True
        )
    # Codex code mode: a JavaScript cell whose shell calls are tools.exec_command(...).
    script = tool_input.get("input") if name == "exec" else None
    if isinstance(script, str) and (commands := _script_commands(script)):
        command = "\n".join(commands)
        # A call whose command is built at run time cannot be read from the text.
        built = len(_SCRIPT_CALLS.findall(script)) > len(commands)
        return Action(
            verb=Verb.EXEC,
            tool=name,
            target=command,
            reads=shell.reads(command, cwd) + shell.reads(script, cwd),
            unknown=built or _LOADS.search(script) is not None,
        )
    if isinstance(script, str) and (_SCRIPT_CALLS.search(script) or _LOADS.search(script)):
        # A cell that runs a command it builds, or prints what an earlier cell stored
        # (`load()`): what it read is not in its text.
        return Action(
            verb=Verb.EXEC, tool=name, target=script, reads=shell.reads(script, cwd), unknown=True
        )
    target = _first(tool_input, keys)
    if target is None and name in _DEFAULTS_TO_CWD:
        target = cwd
    params = _params(tool_input)
    if verb in (Verb.READ, Verb.SEARCH, Verb.EDIT) and (many := _all_paths(tool_input, keys)):
        # `read_many_files {"paths": [...]}`, Copilot's `paths`: every entry is decided.
        return Action(verb=verb, tool=name, target=target, reads=tuple(many), params=params)
    if verb is Verb.EXEC and target:
        workdir = _first(tool_input, _WORKDIR_KEYS) or cwd
        return Action(
            verb=verb, tool=name, target=target, reads=shell.reads(target, workdir), params=params
        )
    return Action(verb=verb, tool=name, target=target, params=params)


# Code mode's `load(key)` returns a value an earlier cell `store()`d.
_LOADS = re.compile(r"(?<![\w.$])load\s*\(")
_SCRIPT_CALLS = re.compile(r"tools\.(?:exec_command|shell_command|shell)\(")
_SCRIPT_CALL = re.compile(
    r"tools\.(?:exec_command|shell_command|shell)\(\s*\{[^}]*?\b(?:cmd|command)\s*:\s*"
    r"(\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'|`[^`]*`)",
    re.S,
)


def _script_commands(script: str) -> list[str]:
    """The shell commands a Codex code-mode script runs, from its string literals."""
    out = []
    for literal in _SCRIPT_CALL.findall(script):
        body = literal[1:-1]
        if literal[0] == "`" and "${" in body:
            continue  # a template filled in at run time: not the command it runs
        if literal[0] == '"':
            with contextlib.suppress(ValueError):
                body = json.loads(literal)
        out.append(body.replace("\\'", "'"))
    return out


def _all_paths(tool_input: Mapping[str, Any], keys: tuple[str, ...]) -> list[str]:
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, list) and len(value) > 1:
            return [v for v in value if isinstance(v, str) and v]
    return []


def _params(tool_input: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """Short scalar inputs, for `Tool(param:value)` rules (`Bash(run_in_background:true)`).
    Long strings (file contents, commands) are primary fields such rules cannot target."""
    out = []
    for key, value in tool_input.items():
        if isinstance(value, bool) or value is None:
            out.append(
                (str(key), "true" if value is True else "false" if value is False else "null")
            )
        elif isinstance(value, int | float) or (isinstance(value, str) and len(value) <= 200):
            out.append((str(key), str(value)))
    return tuple(out)


def _first(tool_input: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = tool_input.get(key)
        if isinstance(value, list):  # argv (Codex `shell`) or a list of paths
            value = shell.join(value) if key == "command" else (value[0] if value else None)
        if isinstance(value, str) and value:
            return value
    return None


def working_directory(texts: Iterable[str]) -> str | None:
    """The working directory an agent states in its prompt, if any."""
    texts = list(texts)
    for pattern in _CWD_PATTERNS:
        for text in texts:
            if m := pattern.search(text):
                return m.group(1)
    return None
