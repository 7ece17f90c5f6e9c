"""All of config.yaml's errors at once, each at its line: the file is read again without
each field found wrong, until it reads."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from gate.errors import ConfigError, GateError, combined

_MAX_ERRORS = 50
_STEP = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def collect[T](
    data: dict[str, Any], path: Path, text: str, parse: Callable[[dict[str, Any], Path], T]
) -> T:
    """`parse(data, path)`, or one ConfigError carrying every error of the file."""
    data = copy.deepcopy(data)
    errors: list[GateError] = []
    tree = _tree(text)
    for _ in range(_MAX_ERRORS):
        try:
            config = parse(data, path)
        except ConfigError as exc:
            steps = _steps(exc.where, path)
            exc.where = _located(exc.where, path, steps, tree)
            if any(e.where == exc.where and e.message == exc.message for e in errors):
                break  # dropping the field did not get past it: stop, never loop
            errors.append(exc)
            if not steps or not _drop(data, steps):
                break
        else:
            if not errors:
                return config
            break
    raise combined(sorted(errors, key=_line_of))


def _line_of(error: GateError) -> int:
    m = re.search(r":(\d+): ", error.where or "")
    return int(m[1]) if m else 0


def _steps(where: str | None, path: Path) -> list[str | int]:
    """`config.yaml: audit.max_size_mb` → ["audit", "max_size_mb"]; [] for no field."""
    prefix = f"{path}: "
    if not where or not where.startswith(prefix):
        return []
    return [m[1] if m[1] is not None else int(m[2]) for m in _STEP.finditer(where[len(prefix) :])]


def _drop(data: Any, steps: list[str | int]) -> bool:
    """Remove the field at `steps` (so the next read goes past it); False if it is not there."""
    for step in steps[:-1]:
        try:
            data = data[step]
        except (KeyError, IndexError, TypeError):
            return False
    try:
        del data[steps[-1]]
    except (KeyError, IndexError, TypeError):
        return False
    return True


def _located(
    where: str | None, path: Path, steps: list[str | int], tree: yaml.Node | None
) -> str | None:
    """`config.yaml: port` → `config.yaml:3: port` where line 3 holds it."""
    line = _line(tree, steps)
    if where is None or line is None:
        return where
    return f"{path}:{line}: {where[len(f'{path}: ') :]}"


def _line(node: yaml.Node | None, steps: list[str | int]) -> int | None:
    line = None
    for step in steps:
        found = None
        if isinstance(node, yaml.MappingNode):
            found = next(((k, v) for k, v in node.value if k.value == str(step)), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            found = (node.value[step], node.value[step]) if step < len(node.value) else None
        if found is None:
            return line
        line, node = found[0].start_mark.line + 1, found[1]
    return line


def _tree(text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
