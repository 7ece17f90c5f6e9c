"""Load rule files (YAML) into rules; every error names file:line and what to write instead."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from gate.errors import GateError, RuleError, combined, compose_yaml, did_you_mean
from gate.rules.model import Effect, Rule, SecretAction, is_allowable_glob, parse

SCHEMA_VERSION = 1
_TOP_KEYS = frozenset(
    {"schemaVersion", "description", "lockdown", "secrets", *(e.value for e in Effect)}
)
# What happens to a likely secret, from most to least protective.
SECRET_ACTIONS = tuple(SecretAction)
_SECRET_KEY = __import__("re").compile(r"^[a-z0-9][a-z0-9._-]*$")
_ENTRY_KEYS = frozenset({"rule", "unless", "reason"})


@dataclass(frozen=True, slots=True)
class RuleFile:
    rules: tuple[Rule, ...]
    lockdown: bool = False  # `lockdown: true`: allow rules of other layers are ignored
    lockdown_line: int = 0
    # `secrets:` — (tier `high`/`low`, a detector kind or id) → action, with file:line
    secrets: tuple[tuple[str, SecretAction, str], ...] = ()


def load_file(path: Path, *, shown_as: str | None = None, root: str | None = None) -> list[Rule]:
    """Rules of one file. A file that exists but holds no rule is an error, never 'allow'."""
    return list(read_file(path, shown_as=shown_as, root=root).rules)


def read_file(
    path: Path, *, shown_as: str | None = None, root: str | None = None, layer: str = ""
) -> RuleFile:
    """One rule file, with its settings. Only a file that sets `lockdown: true` may hold
    no rule; any other file that exists but holds none is an error, never 'allow'."""
    name = shown_as or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RuleError(f"cannot read rule file: {exc}", where=name) from exc
    loaded = parse_text(text, name, root=root, layer=layer)
    if not loaded.rules and not loaded.lockdown and not loaded.secrets:
        raise RuleError(
            "no rules in this file",
            where=name,
            hint="add rules under deny:, ask: or allow:, or delete the file",
        )
    return loaded


def load_text(text: str, name: str, *, root: str | None = None) -> list[Rule]:
    return list(parse_text(text, name, root=root).rules)


def parse_text(text: str, name: str, *, root: str | None = None, layer: str = "") -> RuleFile:
    """One file's rules and settings; every error in it is reported at once (the first
    RuleError carries the others), each with its file:line."""
    doc = compose_yaml(text, name)
    if doc is None:
        return RuleFile(())
    if not isinstance(doc, yaml.MappingNode):
        raise RuleError("expected a mapping with deny:, ask: or allow:", where=_at(name, doc))
    rules: list[Rule] = []
    errors: list[GateError] = []
    lockdown = 0
    secrets: tuple[tuple[str, SecretAction, str], ...] = ()
    for key_node, value in doc.value:
        key = key_node.value
        try:
            if key not in _TOP_KEYS:
                raise RuleError(
                    f"unknown key {key!r}",
                    where=_at(name, key_node),
                    hint=did_you_mean(str(key), _TOP_KEYS),
                )
            if key == "schemaVersion":
                if value.value != str(SCHEMA_VERSION):
                    raise RuleError(
                        f"schemaVersion {value.value} is not supported (this gate"
                        f" reads {SCHEMA_VERSION})",
                        where=_at(name, value),
                    )
            elif key == "lockdown":
                lockdown = _lockdown(value, name)
            elif key == "secrets":
                secrets = _secrets(value, name)
            elif key in {e.value for e in Effect}:
                rules.extend(_entries(Effect(key), value, name, root, layer, errors))
        except RuleError as exc:
            errors.append(exc)
    if errors:
        raise combined(errors)
    return RuleFile(tuple(rules), bool(lockdown), lockdown, secrets)


def _secrets(node: yaml.Node, name: str) -> tuple[tuple[str, SecretAction, str], ...]:
    """`secrets: {high: ask, low: redact, github-token: block, generic.assignment: allow}`."""
    if not isinstance(node, yaml.MappingNode):
        raise RuleError(
            "secrets: must map a tier (high, low) or a detector kind to an action",
            where=_at(name, node),
            hint="secrets:\n  high: ask",
        )
    out = []
    for key_node, value in node.value:
        key = str(key_node.value)
        action = value.value if isinstance(value, yaml.ScalarNode) else None
        if not _SECRET_KEY.match(key):
            raise RuleError(
                f"secrets: {key!r} is not a tier or detector kind", where=_at(name, key_node)
            )
        if action not in SECRET_ACTIONS:
            raise RuleError(
                f"secrets: {key}: {action!r} is not an action",
                where=_at(name, value),
                hint=f"one of {', '.join(SECRET_ACTIONS)}",
            )
        out.append((key, SecretAction(action), _at(name, value)))
    return tuple(out)


def _lockdown(node: yaml.Node, name: str) -> int:
    """The line of `lockdown: true`, 0 for `lockdown: false`."""
    value = node.value if isinstance(node, yaml.ScalarNode) else None
    if value not in ("true", "false"):
        raise RuleError(
            "lockdown: must be true or false", where=_at(name, node), hint="lockdown: true"
        )
    return node.start_mark.line + 1 if value == "true" else 0


def _entries(
    effect: Effect,
    node: yaml.Node,
    name: str,
    root: str | None,
    layer: str,
    errors: list[GateError],
) -> list[Rule]:
    """The list's rules; an entry in error is added to `errors` and the rest still read."""
    if isinstance(node, yaml.ScalarNode) and node.value in ("", "null", "~"):
        return []
    if not isinstance(node, yaml.SequenceNode):
        raise RuleError(
            f"{effect.value}: must be a list of rules",
            where=_at(name, node),
            hint=f"{effect.value}:\n  - Read(./.env)",
        )
    out = []
    for item in node.value:
        try:
            out.append(_entry(effect, item, name, root, layer))
        except RuleError as exc:
            errors.append(exc)
    return out


def _entry(effect: Effect, node: yaml.Node, name: str, root: str | None, layer: str) -> Rule:
    unless: tuple[str, ...] = ()
    rule_node = node
    if isinstance(node, yaml.MappingNode):
        fields = {k.value: v for k, v in node.value}
        extra = sorted(set(fields) - _ENTRY_KEYS)
        if extra:
            raise RuleError(
                f"unknown key {extra[0]!r} in a rule entry",
                where=_at(name, node),
                hint=did_you_mean(str(extra[0]), _ENTRY_KEYS) + "; a rule entry"
                " has rule:, and optionally unless: and reason:",
            )
        if "rule" not in fields:
            raise RuleError("rule entry has no rule:", where=_at(name, node))
        rule_node = fields["rule"]
        if "unless" in fields:
            unless = _unless(fields["unless"], name)
    if not isinstance(rule_node, yaml.ScalarNode) or not rule_node.value.strip():
        raise RuleError("a rule must be a string like Read(./.env)", where=_at(name, rule_node))
    if _folded(rule_node):
        # A slipped indent: YAML joins the next line onto this item, and the two rules
        # become one that matches neither (`Read(./.env) Read(./secrets/**)`).
        raise RuleError(
            f"this rule runs on to line {rule_node.end_mark.line + 1}, so YAML"
            f" read two lines as one rule: {rule_node.value!r}",
            where=_at(name, rule_node),
            hint="start each rule on its own line with '- ', indented like the"
            " one above (a multi-line command goes in a | block)",
        )
    try:
        tool, spec = parse(rule_node.value)
    except ValueError as exc:
        raise RuleError(str(exc), where=_at(name, rule_node)) from exc
    if unless and tool not in ("Read", "Edit"):
        raise RuleError(
            "unless: applies to Read(...) and Edit(...) path rules only", where=_at(name, node)
        )
    if effect is Effect.ALLOW and "*" in tool and not is_allowable_glob(tool):
        raise RuleError(
            f"allow: {tool!r} is not a pattern Claude Code accepts in allow",
            where=_at(name, rule_node),
            hint="an allowed tool-name pattern starts with mcp__<server>__, e.g."
            " mcp__github__get_*",
        )
    return Rule(
        effect=effect,
        tool=tool,
        specifier=spec,
        source=name,
        line=rule_node.start_mark.line + 1,
        root=root,
        unless=unless,
        layer=layer,
    )


def _unless(node: yaml.Node, name: str) -> tuple[str, ...]:
    if not isinstance(node, yaml.SequenceNode) or not all(
        isinstance(n, yaml.ScalarNode) and n.value.strip() for n in node.value
    ):
        raise RuleError(
            "unless: must be a list of path patterns",
            where=_at(name, node),
            hint="unless: [./.env.example]",
        )
    return tuple(n.value.strip() for n in node.value)


def _folded(node: yaml.ScalarNode) -> bool:
    """A plain or quoted scalar written over several lines (a | or > block is meant)."""
    return node.style in (None, "'", '"') and node.end_mark.line > node.start_mark.line


def _at(name: str, node: yaml.Node) -> str:
    return f"{name}:{node.start_mark.line + 1}"
