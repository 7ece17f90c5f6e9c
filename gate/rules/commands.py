"""`Bash(...)` rules: Claude Code's command patterns, and a command line split into its parts.

A deny or ask rule matches a command when it matches any part of it, in any of the forms
the part takes as wrappers and `VAR=` assignments are peeled off (`sudo curl x` is also
`curl x`). An allow rule matches only when it matches every part, each with Claude Code's
own wrappers stripped and nothing else. Over-matching a deny is the safe side; so is
under-matching an allow.
"""

from __future__ import annotations

import os
import re
import shlex
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache

from gate.rules import cmdline
from gate.rules.names import star_regex

# Claude Code strips these before matching (protocols.md §5); `xargs` only when bare.
CLAUDE_WRAPPERS = frozenset(
    {"timeout", "time", "nice", "nohup", "stdbuf", "command", "builtin", "noglob"}
)
# For deny and ask, every wrapper that runs the command after it, so `sudo curl` is curl.
DENY_WRAPPERS = CLAUDE_WRAPPERS | frozenset(
    {
        "xargs",
        "env",
        "sudo",
        "doas",
        "exec",
        "ionice",
        "chrt",
        "taskset",
        "unbuffer",
        "caffeinate",
        "watch",
        "nsenter",
        "chroot",
        "flock",
        "setsid",
        "torsocks",
        "proxychains",
        "proxychains4",
        "eval",
        "busybox",
    }
)
# Options of those wrappers that take a separate value (`timeout -s KILL 5 cmd`).
_VALUED = {
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
    "nice": {"-n", "--adjustment"},
    "stdbuf": {"-i", "-o", "-e"},
    "xargs": {
        "-I",
        "-n",
        "-P",
        "-d",
        "-L",
        "-s",
        "-E",
        "-a",
        "--max-args",
        "--max-procs",
        "--delimiter",
        "--arg-file",
        "--max-lines",
        "--max-chars",
        "--replace",
    },
    "sudo": {"-u", "-g", "-U", "-C", "-D", "-h", "-p", "-r", "-t", "-R"},
    "env": {"-u", "--unset", "-C", "--chdir", "-S", "--split-string"},
    "ionice": {"-c", "-n", "-p", "-P", "-u"},
    "watch": {"-n", "--interval", "-d"},
    "flock": {"-w", "-E", "-c"},
}
_ASSIGN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\[[^]]*\])?\+?=", re.S)
_WRAPPER_ARG = re.compile(r"^(?:[0-9.]+[smhd]?|0x[0-9a-fA-F]+|[0-9,-]+)$")
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_DASH_C = re.compile(r"^-[a-zA-Z]*c[a-zA-Z]*$")
_REDIRECTS = frozenset({"<", ">", ">>", "&>", ">&", ">|", "<>", "<<", "<<<"})
_KEYWORDS = frozenset(
    {"then", "do", "else", "elif", "if", "while", "until", "fi", "done", "!", "{", "}", "$", "esac"}
)
_SUBST = re.compile(r"\$\(([^()]*(?:\([^()]*\)[^()]*)*)\)|`([^`]*)`|<\(([^()]*)\)")
_MAX_DEPTH = 4
# Commands that run a command given after an option (`su -c CMD`, `flock F -c CMD`).
_RUNS_OPTION = {
    "su": ("-c", "--command"),
    "runuser": ("-c", "--command"),
    "script": ("-c", "--command"),
    "flock": ("-c", "--command"),
    "env": ("-S", "--split-string"),
}
# find's actions that run a command, up to `;` or `+`.
_FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


@dataclass(frozen=True, slots=True)
class Part:
    """One simple command of a command line."""

    forms: tuple[str, ...]  # for deny and ask: as written, then each wrapper peeled off
    allowed_form: str  # for allow: Claude Code's wrappers stripped, nothing else


@lru_cache(maxsize=4096)
def compile_pattern(spec: str) -> tuple[re.Pattern[str], ...]:
    """A Bash(...) specifier as regexes over one part, written with single spaces; a part
    matches when one of them matches it whole.

    `*` matches any sequence, spaces included. A trailing ` *` (or the legacy `:*`) makes
    the rest optional but keeps a word boundary: `ls *` matches `ls` and `ls -la`, not
    `lsof`. Quoting in the pattern is read as the shell reads it, like the command.
    """
    text = _normalise(spec)
    if text.endswith(":*"):
        text = text[:-2] + " *"
    forms = [text]
    if text.endswith(" *") and text.strip(" *"):
        forms.append(text[:-2])
    return tuple(re.compile(star_regex(f), re.S) for f in forms)


def _normalise(spec: str) -> str:
    try:
        words = shlex.split(spec)
    except ValueError:
        words = spec.split()
    return " ".join(words)


def matches_any(patterns: tuple[re.Pattern[str], ...], parts: tuple[Part, ...]) -> bool:
    """A deny or ask rule: some form of some part matches."""
    return any(p.fullmatch(form) for part in parts for form in part.forms for p in patterns)


def matches_every(patterns: tuple[re.Pattern[str], ...], parts: tuple[Part, ...]) -> bool:
    """An allow rule: every part matches, Claude Code's wrappers stripped."""
    return bool(parts) and all(
        any(p.fullmatch(part.allowed_form) for p in patterns) for part in parts
    )


@lru_cache(maxsize=8192)  # every turn resends every earlier command
def parts(command: str) -> tuple[Part, ...]:
    """The simple commands of a command line: split on `&& || ; | |& &` and newlines, with
    subshells, brace groups, `$(...)`, backticks, `<(...)`, `sh -c` and `eval` scripts,
    `find -exec`, `env -S`, `su -c` and the like; `$'...'` strings read as bash reads them."""
    out: dict[Part, None] = {}
    for words in _simple_commands(cmdline.unquote_ansi_c(command), 0):
        if words:
            out.setdefault(_part(words), None)
    return tuple(out)


def _simple_commands(command: str, depth: int) -> list[list[str]]:
    found: list[list[str]] = []
    current: list[str] = []
    tokens = cmdline.tokens(command)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok in _REDIRECTS and tokens[i + 1 : i + 2] != ["("]:  # not `<(...)`
            if current and current[-1].isdigit() and len(current[-1]) == 1:
                current.pop()  # `2>&1`: the descriptor belongs to the redirection
            # The redirection and its target are not words of the command, but a
            # substitution in the target (`<<< "$(curl x)"`) still runs.
            if i + 1 < len(tokens) and depth < _MAX_DEPTH:
                found += _substitutions(tokens[i + 1], depth + 1)
            i += 2
            continue
        if tok == "$" and tokens[i + 1 : i + 2] == ["("]:
            pass  # `$(`: the substitution is a command of its own
        elif tok in cmdline.OPS or (not current and tok in _KEYWORDS):
            found.append(current)
            current = []
        else:
            current.append(tok)
        i += 1
    found.append(current)
    if depth < _MAX_DEPTH:
        for words in list(found):
            found += _nested(words, depth + 1)
    return found


def _nested(words: list[str], depth: int) -> list[list[str]]:
    """Commands inside words: substitutions in quoted words, `sh -c` and `eval` scripts."""
    out: list[list[str]] = []
    for word in words:
        out += _substitutions(word, depth)
    stripped = _peel_all(words)
    name = os.path.basename(stripped[0]) if stripped else ""
    args = stripped[1:]
    at = next((i for i, a in enumerate(args[:-1]) if _DASH_C.match(a)), None)
    if name in _SHELLS and at is not None:
        out += _simple_commands(args[at + 1], depth)
    elif name == "eval" and args:
        out += _simple_commands(" ".join(args), depth)
    elif name == "find":
        out += _find_exec(args)
    for rest in _chain(words):  # every step, since peeling drops `env -S CMD`
        if rest and (script := _option_script(os.path.basename(rest[0]), rest[1:])):
            out += _simple_commands(script, depth)
    return out


def _option_script(name: str, args: list[str]) -> str | None:
    """The command line a runner takes as an option's value (`su -c CMD`, `env -S CMD`)."""
    options = _RUNS_OPTION.get(name)
    if options is None:
        return None
    short, long = options
    for i, arg in enumerate(args):
        clustered = re.fullmatch(r"-[a-zA-Z]+", arg) is not None and arg.endswith(short[1])
        if (arg in options or clustered) and i + 1 < len(args):  # `-c CMD`, `-qc CMD`
            return " ".join([args[i + 1], *args[i + 2 :]] if name == "env" else [args[i + 1]])
        if arg.startswith(long + "="):
            return arg.split("=", 1)[1]
        if arg.startswith(short) and len(arg) > 2 and not arg.startswith("--"):
            return arg[2:]  # `-c'curl x'`, `-Scurl x`
    return None


def _find_exec(args: list[str]) -> list[list[str]]:
    """`find ... -exec CMD {} ;` runs CMD: each action's words, up to `;` or `+`."""
    out: list[list[str]] = []
    for i, arg in enumerate(args):
        if arg in _FIND_EXEC:
            words = []
            for word in args[i + 1 :]:
                if word in (";", "+"):
                    break
                words.append(word)
            if words:
                out.append(words)
    return out


def _substitutions(word: str, depth: int) -> list[list[str]]:
    out: list[list[str]] = []
    for m in _SUBST.finditer(word):
        out += _simple_commands(next(g for g in m.groups() if g is not None), depth)
    return out


def _part(words: list[str]) -> Part:
    forms: dict[str, None] = {" ".join(words): None}
    rest = words
    while rest:
        head = os.path.basename(rest[0])
        if _ASSIGN.match(rest[0]):
            rest = rest[1:]
        elif head != rest[0] and head:  # /usr/bin/curl is curl
            rest = [head, *rest[1:]]
        elif head in DENY_WRAPPERS:
            rest = peel(rest)
        else:
            break
        if rest:
            forms.setdefault(" ".join(rest), None)
    return Part(tuple(forms), " ".join(_claude_stripped(words)))


def _claude_stripped(words: list[str]) -> list[str]:
    while words and words[0] in CLAUDE_WRAPPERS | {"xargs"}:
        if words[0] == "xargs" and len(words) > 1 and words[1].startswith("-"):
            break  # only a bare xargs is stripped
        words = peel(words)
    return words


def _peel_all(words: list[str]) -> list[str]:
    """The command behind every assignment and wrapper (`eval` is kept: its arguments are
    a script of their own)."""
    return deque(_chain(words), maxlen=1)[0]


def _chain(words: list[str]) -> Iterator[list[str]]:
    """A command as written, then behind each assignment and wrapper in turn (the last
    step may be empty: `sudo` alone)."""
    yield words
    while words:
        if _ASSIGN.match(words[0]):
            words = words[1:]
        elif os.path.basename(words[0]) in DENY_WRAPPERS - {"eval"}:
            words = peel(words)
        else:
            return
        yield words


def peel(words: list[str]) -> list[str]:
    """Drop one wrapper with its options and arguments (`timeout -s KILL 5`, `env A=1`)."""
    name = os.path.basename(words[0])
    valued = _VALUED.get(name, set())
    rest = words[1:]
    while rest:
        word = rest[0]
        if word in valued:
            rest = rest[2:]
        elif word == "--":
            rest = rest[1:]
            break
        elif word.startswith("-") or _ASSIGN.match(word) or _WRAPPER_ARG.match(word):
            rest = rest[1:]
        else:
            break
    return rest
