"""Shell state one call leaves to the next: agents keep one shell across calls, so a file
`source`d in one command is printed by a later `env` or `printenv` of the same
conversation. Such a later call is taken to read the files sourced before it."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache

from gate.agents import shell
from gate.agents.actions import Action, Verb

# Words that put a file's values into the shell's variables: `source .env`, `. ./.env`,
# `export $(cat .env | xargs)`, `eval "$(cat .env)"`, `set -a; . .env`, `declare ...`.
_SETTERS = frozenset({"source", ".", "export", "eval", "declare", "typeset", "readonly", "set"})
# Where a word stands as a command of its own (the separators, and wrappers before it).
_BEFORE = shell._SEPARATORS | frozenset(
    {"sudo", "exec", "command", "nohup", "time", "xargs", "builtin"}
)
# Programs reading their environment whole, from the text of an inline script.
_ENVIRON = re.compile(r"environ\b|process\.env\b|\bENV\b|%ENV|\bgetenv\b|Deno\.env")


def carry(
    actions: Sequence[Action],
    sourced: dict[str, None] | None = None,
    ends: list[int] | None = None,
) -> list[Action]:
    """`actions` in call order, each later environment dump reading the files the calls
    before it sourced (the safe side: any command setting variables that read a file).
    `sourced`: the files sourced before the first of them (the shell state calls before
    them left), updated in place; `ends`: how many files are sourced after each call is
    appended to it."""
    out: list[Action] = []
    sourced = {} if sourced is None else sourced
    for action in actions:
        out.append(after(action, tuple(sourced)))
        sourced.update(dict.fromkeys(sourcing(action)))
        if ends is not None:
            ends.append(len(sourced))
    return out


def after(action: Action, sourced: tuple[str, ...]) -> Action:
    """The action as it runs in a shell that has sourced `sourced`."""
    if not sourced or action.verb is not Verb.EXEC or not action.target or not dumps(action.target):
        return action
    return replace(action, reads=tuple(dict.fromkeys((*action.reads, *sourced))))


def sourcing(action: Action) -> tuple[str, ...]:
    """The files a command may leave in the shell's variables."""
    if action.verb is not Verb.EXEC or not action.target or not action.reads:
        return ()
    return action.reads if _sets(action.target) else ()


@lru_cache(maxsize=8192)  # every turn resends every earlier command
def _sets(command: str) -> bool:
    return bool(_SETTERS & set(shell._tokens(command)))


@lru_cache(maxsize=8192)
def dumps(command: str) -> bool:
    """Whether a command prints (or hands a program) the shell's environment whole."""
    if _ENVIRON.search(command):
        return True
    words = shell._tokens(command)
    for i, w in enumerate(words):
        if i and words[i - 1] not in _BEFORE:
            continue
        nxt = words[i + 1] if i + 1 < len(words) else "\n"
        bare = nxt in shell._SEPARATORS or nxt in (">", ">>")
        if w in ("env", "printenv", "compgen"):
            return True
        if w in ("set", "export") and (bare or nxt == "-p"):
            return True
        if w in ("declare", "typeset") and (
            bare or (nxt.startswith("-") and any(c in nxt for c in "px"))
        ):
            return True
    return False
