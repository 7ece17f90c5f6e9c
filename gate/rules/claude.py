"""Claude Code's own settings as a rule layer: `permissions.deny` and `permissions.ask`.

These are the agent's files, not gate's: a malformed one is a warning, never a stop. Allow
rules are not read; they could only loosen what gate withholds.
"""

from __future__ import annotations

import bisect
import contextlib
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from gate import dirs
from gate.errors import RuleError
from gate.rules import probe
from gate.rules.model import Effect, Rule, parse

_EFFECTS = (Effect.DENY, Effect.ASK)
_WS = re.compile(r"[ \t\n\r]*")
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_SCALAR = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")


def managed_dir() -> Path:
    """Where Claude Code's managed settings live; `$GATE_CLAUDE_MANAGED_DIR` relocates it."""
    if env := os.environ.get("GATE_CLAUDE_MANAGED_DIR"):
        return Path(env)
    if sys.platform == "darwin":
        return Path("/Library/Application Support/ClaudeCode")
    if sys.platform == "win32":
        return Path(r"C:\Program Files\ClaudeCode")
    return Path("/etc/claude-code")


def managed_files() -> list[Path]:
    """`managed-settings.json`, then `managed-settings.d/*.json` in name order."""
    base = managed_dir()
    files = [base / "managed-settings.json"]
    drop_in = base / "managed-settings.d"
    files += sorted(p for p in probe.listing(drop_in, "*.json") if not p.name.startswith("."))
    return [f for f in files if probe.is_file(f)]


def project_files(root: str) -> list[Path]:
    """`.claude/settings.json` and `.claude/settings.local.json` of the project: in its root
    and every parent that has them, nearest first, never the home directory's `.claude/`
    (the user's settings). No `.git` stops the search: anyone can make one, and a
    settings file made lower down must add its rules to the repository's, never hide them."""
    home = Path.home()
    found: list[Path] = []
    for d in dirs.owned_ancestors(Path(root)):
        if d != home:
            names = ("settings.local.json", "settings.json")
            found += [f for f in (d / ".claude" / n for n in names) if probe.is_file(f)]
    return found


def user_file() -> Path:
    return Path.home() / ".claude" / "settings.json"


def read(
    path: Path, shown_as: str, root: str | None, layer: str
) -> tuple[tuple[Rule, ...], tuple[str, ...]]:
    """The deny and ask rules of one settings file, and warnings for the rules it skipped.

    Raises RuleError when the file as a whole is unusable (unreadable, not JSON, or
    `permissions` of the wrong shape); the caller turns that into a warning.
    """
    try:
        text = path.read_text(encoding="utf-8")
        doc = json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"cannot read Claude Code settings: {exc}", where=shown_as) from exc
    except json.JSONDecodeError as exc:
        raise RuleError(f"not valid JSON: {exc.msg}", where=f"{shown_as}:{exc.lineno}") from exc
    lines = value_lines(text)
    if not isinstance(doc, dict):
        raise RuleError("expected a JSON object", where=f"{shown_as}:{lines.get((), 1)}")
    perms = doc.get("permissions")
    if perms is None:
        return (), ()
    if not isinstance(perms, dict):
        raise RuleError(
            "permissions must be an object", where=f"{shown_as}:{lines.get(('permissions',), 1)}"
        )
    rules: list[Rule] = []
    warnings: list[str] = []
    for effect in _EFFECTS:
        entries = perms.get(effect.value)
        at = ("permissions", effect.value)
        if entries is None:
            continue
        if not isinstance(entries, list):
            raise RuleError(
                f"permissions.{effect.value} must be a list of rule strings",
                where=f"{shown_as}:{lines.get(at, 1)}",
            )
        for i, entry in enumerate(entries):
            where = f"{shown_as}:{lines.get((*at, i), 1)}"
            try:
                if not isinstance(entry, str) or not entry.strip():
                    raise ValueError(f"{entry!r} is not a rule string")
                tool, spec = parse(entry)
            except ValueError as exc:
                warnings.append(f"{where}: {exc}; gate skips this Claude Code rule")
                continue
            rules.append(
                Rule(
                    effect=effect,
                    tool=tool,
                    specifier=spec,
                    source=shown_as,
                    line=int(where.rsplit(":", 1)[1]),
                    root=root,
                    layer=layer,
                )
            )
    return tuple(rules), tuple(warnings)


def value_lines(text: str) -> dict[tuple[Any, ...], int]:
    """The 1-based line of every value in a JSON text, by its path of keys and indices.

    Only called on text `json.loads` accepted, so it does not check the grammar.
    """
    breaks = [i for i, c in enumerate(text) if c == "\n"]
    out: dict[tuple[Any, ...], int] = {}

    def value(i: int, path: tuple[Any, ...]) -> int:
        i = _skip(text, i)
        out[path] = bisect.bisect_right(breaks, i - 1) + 1
        opener = text[i]
        if opener == '"':
            return _string(text, i)[1]
        if opener not in "{[":
            m = _SCALAR.match(text, i)
            return m.end() if m else i + 1
        i, n = i + 1, 0
        while (i := _skip(text, i)) < len(text) and text[i] not in "}]":
            if text[i] == ",":
                i += 1
            elif opener == "{":
                key, i = _string(text, i)
                i = value(text.index(":", i) + 1, (*path, key))
            else:
                i = value(i, (*path, n))
                n += 1
        return i + 1

    with contextlib.suppress(IndexError, ValueError):  # lines are a courtesy
        value(0, ())
    return out


def _string(text: str, i: int) -> tuple[str, int]:
    m = _STRING.match(text, i)
    if not m:
        raise ValueError("not a JSON string")
    return str(json.loads(m.group())), m.end()


def _skip(text: str, i: int) -> int:
    m = _WS.match(text, i)
    return m.end() if m else i
