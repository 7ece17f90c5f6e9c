"""The GateError tree: what the user sees when something is wrong, and what to do next."""

from __future__ import annotations

from typing import Any


class GateError(Exception):
    """An error the user can act on. `where` names the file, line or field."""

    def __init__(self, message: str, *, where: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.where = where
        self.hint = hint

    def diagnostics(self) -> str:
        head = f"{self.where}: {self.message}" if self.where else self.message
        return f"{head}\n  hint: {self.hint}" if self.hint else head


class ConfigError(GateError):
    """config.yaml is unreadable or invalid."""


class RuleError(GateError):
    """A rule file is unreadable or a rule in it is invalid."""


class StateError(GateError):
    """A state file in the data dir is unusable."""


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
