"""`gate history redact`: what a scan found, replaced in each store with the wire's
placeholders, after the originals are backed up; stores in use by an agent are skipped."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from gate.history import rewrite
from gate.history.backup import Backup
from gate.history.engine import Found
from gate.history.holders import Holder, holders
from gate.history.model import Agent, Form


@dataclass(slots=True, kw_only=True)
class Plan:
    """One store's edits: every value found in it and the placeholder it becomes."""

    path: Path
    form: Form
    agent: Agent
    values: dict[str, str] = field(default_factory=dict)  # value → placeholder (memory only)
    findings: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    plan: Plan
    changed: int = 0
    held: tuple[Holder, ...] = ()
    error: str | None = None
    left: tuple[Path, ...] = ()  # files still holding a value after the edit (a bug)


def plans(found: Iterable[Found], forms: dict[Path, Form]) -> list[Plan]:
    out: dict[Path, Plan] = {}
    for f in found:
        path = f.finding.store
        plan = out.setdefault(path, Plan(path=path, form=forms[path], agent=f.finding.agent))
        plan.values.setdefault(f.value, f.finding.replacement)
        plan.findings += 1
    return list(out.values())


def apply(plan: Plan, backup: Backup | None) -> Outcome:
    if held := holders([plan.path]):
        return Outcome(plan=plan, held=tuple(held))
    try:
        if backup is not None:
            backup.save(plan.path)
        changed = rewrite.rewrite(plan.path, plan.form, plan.values)
    except (OSError, sqlite3.Error, ValueError) as exc:
        return Outcome(plan=plan, error=f"{type(exc).__name__}: {exc}")
    left = rewrite.leftover([plan.path], plan.values)
    return Outcome(plan=plan, changed=changed, left=tuple(left))
