"""The GateError tree: what the user sees when something is wrong, and what to do next."""

from __future__ import annotations


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
