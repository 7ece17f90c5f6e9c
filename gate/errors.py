"""The GateError tree: what the user sees when something is wrong, and what to do next."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any


class GateError(Exception):
    """An error the user can act on. `where` names the file, line or field. The CLI exits
    with `exit_code`: 1 for a refusal (docs/usage.md lists the codes)."""

    exit_code = 1

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint
        self.also: tuple[GateError, ...] = ()  # more errors found in the same file

    def diagnostics(self) -> str:
        head = f"{self.where}: {self.message}" if self.where else self.message
        one = f"{head}\n  hint: {self.hint}" if self.hint else head
        return "\n".join([one, *(e.diagnostics() for e in self.also)])

    def to_json(self) -> dict[str, Any]:
        """The `error` object of a failed --json command."""
        out: dict[str, Any] = {
            "code": type(self).__name__,
            "message": self.message,
            "hint": self.hint or "",
        }
        if self.where:
            out["where"] = self.where
        if self.also:
            out["also"] = [e.to_json() for e in self.also]
        return out


def combined(errors: list[GateError]) -> GateError:
    """The first error, carrying the others: all of a file's errors are reported at once."""
    first = errors[0]
    first.also = (*first.also, *errors[1:])
    return first


def did_you_mean(given: str, known: Iterable[str], what: str = "known keys") -> str:
    """A hint naming the closest known spelling, then all of them."""
    known = sorted(known)
    close = difflib.get_close_matches(given, known, n=1, cutoff=0.6)
    listed = f"{what}: {', '.join(known)}"
    return f"did you mean {close[0]!r}? ({listed})" if close else listed


class ConfigError(GateError):
    """config.yaml is unreadable or invalid."""


class RuleError(GateError):
    """A rule file is unreadable or a rule in it is invalid."""


class StateError(GateError):
    """A state file in the data dir is unusable."""

    exit_code = 3


class Unreachable(GateError):
    """Something gate must read or reach cannot be: a directory, the audit, a running gate."""

    exit_code = 3


def compose_yaml(text: str, name: str) -> Any:
    """The YAML node tree of a rule or detector file (nodes keep their line numbers);
    a syntax error becomes a RuleError naming name:line."""
    import yaml

    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark else name
        raise RuleError(f"not valid YAML: {getattr(exc, 'problem', exc)}", where=where) from exc
