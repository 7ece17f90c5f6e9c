"""The actions a gate mapped its tool calls to, remembered: agents resend every earlier call
each turn. One per gate (held by its Screens), never shared between gates."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Mapping
from typing import Any

import orjson

from gate.agents import tools
from gate.agents.actions import Action

MAX_ACTIONS = 20_000

Key = tuple[str, str | None, str | None, bytes]
# A tool call (name, input, working directory) → its action: tools.action or a memo's.
ActionOf = Callable[[str, Mapping[str, Any], str | None], Action]


class ActionMemo:
    """tools.action, remembered by what it is a function of: the tool's name, its whole
    input (a digest of it, in its key order), the working directory and the home directory
    (shell paths expand `~`)."""

    def __init__(self, max_actions: int = MAX_ACTIONS) -> None:
        self.max = max_actions
        self._actions: dict[Key, Action] = {}

    def action(self, name: str, tool_input: Mapping[str, Any], cwd: str | None) -> Action:
        try:
            digest = hashlib.blake2b(orjson.dumps(tool_input), digest_size=16).digest()
        except (TypeError, orjson.JSONEncodeError):  # not plain JSON: worked out every time
            return tools.action(name, tool_input, cwd)
        key = (name, cwd, os.environ.get("HOME"), digest)
        found = self._actions.get(key)
        if found is None:
            found = tools.action(name, tool_input, cwd)
            if len(self._actions) >= self.max:
                self._actions.clear()  # a new start: what recurs is remembered again
            self._actions[key] = found
        return found

    def __len__(self) -> int:
        return len(self._actions)
