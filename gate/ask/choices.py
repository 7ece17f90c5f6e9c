"""The closed sets an answer is made of: what was chosen, and how long it holds."""

from __future__ import annotations

from enum import StrEnum


class Choice(StrEnum):
    """What a question was answered with: written to the dataset, the audit, decision
    memory and the control API; never rename."""

    APPROVE = "approve"  # the content leaves as it is
    REDACT = "redact"  # a placeholder leaves instead
    BLOCK = "block"  # the whole request is refused
    # Not an answer anyone may give: the request went away (or the question was closed)
    # unanswered.
    WITHDRAWN = "withdrawn"


# What a person, a helper or memory may answer.
ANSWERS = (Choice.APPROVE, Choice.REDACT, Choice.BLOCK)


class Scope(StrEnum):
    """How long an answer holds: sent as `remember`, stored with remembered answers."""

    ONCE = "once"  # this question only: nothing is stored
    SESSION = "session"  # same session id, this gate process only
    PROJECT = "project"  # same project root, persisted
    ALWAYS = "always"  # everywhere, persisted
    TEAM = "team"  # every gate of the team, in this repository (memory_team.py)
