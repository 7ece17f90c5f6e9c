"""Placeholders that say what happened, so the model does not loop re-reading a file.

They are a pure function of their inputs: the same request always gives the same bytes,
so every turn's resent history stays byte-identical and prompt caches keep working.
"""

from __future__ import annotations

from gate.agents.actions import Action
from gate.rules.model import Effect, Rule


def withheld(action: Action, rule: Rule, path: str | None = None) -> str:
    if rule.effect is Effect.ASK:
        # Asked and not approved (or nobody answered in time): withheld, and says so.
        return (
            f"[gate: content withheld. {action.describe(path)} needs the user's approval"
            f" under rule {rule.text} ({rule.where}), and the user did not approve sending"
            " it, so the content was not sent to the model provider. Ask the user to share"
            " it if you need it.]"
        )
    return (
        f"[gate: content withheld. {action.describe(path)} is denied by rule {rule.text}"
        f" ({rule.where}). The content was not sent to the model provider; do not retry"
        " this or read the file another way. Ask the user if you need it.]"
    )
