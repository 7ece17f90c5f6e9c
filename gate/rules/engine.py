"""Decide an action against a policy: deny > ask > allow, whichever layer a rule came from."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import ClassVar

from gate.agents.actions import Action, Verb
from gate.rules import commands, domains, globs, names
from gate.rules.loader import SECRET_ACTIONS
from gate.rules.model import Effect, Kind, Rule, SecretAction

# Which rule tools cover which verbs. A Read rule also covers search tools (Grep, Glob, LS),
# edits of the same path (an edit's result shows the file's content) and shell commands
# that read the path (`cat .env`).
_RULE_VERBS: dict[str, frozenset[Verb]] = {
    "Read": frozenset({Verb.READ, Verb.SEARCH, Verb.EDIT, Verb.EXEC}),
    "Edit": frozenset({Verb.EDIT}),
}
# Bash(...) rules cover every agent's shell tool (a team's rule is about the command, not
# the agent) except PowerShell, whose commands Claude Code matches with PowerShell(...).
_NOT_BASH = frozenset({"PowerShell"})
_ORDER = (Effect.DENY, Effect.ASK, Effect.ALLOW)
_CACHE_MAX = 20_000


@dataclass(frozen=True, slots=True)
class Decision:
    effect: Effect | None  # None: no rule matched
    rule: Rule | None
    path: str | None = None  # the path the rule matched, when it is a path rule


@dataclass(frozen=True, slots=True, kw_only=True)
class Policy:
    # A decision is a function of the rules, the action and which files its targets name
    # (stamp_of): one made before holds while those are the same files.
    BY_STAMP: ClassVar[bool] = True

    rules: tuple[Rule, ...]
    ignored: tuple[Rule, ...] = ()  # allow rules set aside by a managed `lockdown: true`
    warnings: tuple[str, ...] = ()  # rule files gate read only in part, or not at all
    lockdown: bool = False
    # What each layer says about likely secrets, in layer order: (role, tables), role
    # `default` (shipped packs), `trusted` (managed, user) or `project` (the project's
    # files, which the agent may write); tables are the layer's (key, action) settings,
    # with versions held since gate started (see secret_action).
    secrets: tuple[tuple[str, tuple[SecretTable, ...]], ...] = ()
    # Agents resend the whole history every turn: each call is decided once per policy.
    # A cached decision is reused only while the files it looked at are the same files
    # (a path later replaced by a symlink to .env is decided again).
    _cache: dict[tuple[Action, str | None], tuple[tuple[object, ...], Decision]] = field(
        default_factory=dict, compare=False, repr=False
    )

    def secret_action(self, kind: str, rule_id: str, tier: str) -> SecretAction:
        """What to do with a likely secret. Each layer answers on its own (its setting for
        the detector id, else the kind, else the tier); the most protective answer of the
        managed and user files wins, else that of the shipped packs, else high → ask and
        low → redact. A project file may only make that stricter: the agent can write it."""
        keys = (rule_id, kind, tier)
        said: dict[str, list[SecretAction]] = {"default": [], "trusted": [], "project": []}
        for role, tables in self.secrets:
            said[role] += [a for t in tables if (a := _answer(t, keys)) is not None]
        base = (
            _strictest_action(said["trusted"])
            or _strictest_action(said["default"])
            or (SecretAction.ASK if tier == "high" else SecretAction.REDACT)
        )
        return _strictest_action([base, *said["project"]]) or base

    def decide(
        self,
        action: Action,
        project_root: str | None,
        seen: dict[tuple[str, str | None], object] | None = None,
    ) -> Decision:
        """The first matching rule's effect (deny, then ask, then allow). `seen`: the files
        other decisions of the same moment looked at (stat'ed once), added to."""
        key = (action, project_root)
        stamp = stamp_of(action, project_root, seen)
        hit = self._cache.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        decision = self._decide(action, project_root)
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[key] = (stamp, decision)
        return decision

    def _decide(self, action: Action, project_root: str | None) -> Decision:
        call = _Call(action, project_root)
        for effect in _ORDER:
            for rule in self.rules:
                if rule.effect is effect and (hit := _match(rule, call)) is not None:
                    return Decision(effect, rule, hit or None)
        return Decision(None, None)


SecretTable = tuple[tuple[str, SecretAction], ...]  # (tier, detector kind or id) → action


def _answer(table: SecretTable, keys: tuple[str, str, str]) -> SecretAction | None:
    settings = dict(table)
    return next((settings[k] for k in keys if k in settings), None)


def _strictest_action(actions: list[SecretAction]) -> SecretAction | None:
    return min(actions, key=SECRET_ACTIONS.index, default=None)


class _Call:
    """One action with what its rules look at, each worked out once, when first needed."""

    def __init__(self, action: Action, project_root: str | None):
        self.action = action
        self.root = project_root
        self.home = os.path.expanduser("~")

    @cached_property
    def paths(self) -> list[tuple[str, tuple[str, ...]]]:
        # Each path the action touches, as named and as resolved (symlinks).
        return [(t, globs.candidates(t, self.root)) for t in targets(self.action)]

    @cached_property
    def parts(self) -> tuple[commands.Part, ...]:
        return commands.parts(self.action.target or "")

    @cached_property
    def hosts(self) -> tuple[str, ...]:
        return domains.hosts(self.action.target or "")


def _match(rule: Rule, call: _Call) -> str | None:
    """Whether a rule matches: None if not, else the path it matched ("" if no path)."""
    action = call.action
    kind = rule.kind
    if action.unknown and rule.effect is not Effect.ALLOW and _covers(rule, action):
        return ""  # its target could be anything: every deny or ask rule for it applies
    if kind is Kind.PATH:
        if action.verb not in _RULE_VERBS[rule.tool]:
            return None
        for target, candidates in call.paths:
            if rule.specifier is None or _path_matches(rule, candidates, call.root, call.home):
                return target
        return None
    allow = rule.effect is Effect.ALLOW
    if kind is Kind.COMMAND:
        if action.verb is not Verb.EXEC or action.tool in _NOT_BASH:
            return None
        if rule.specifier is None:
            return ""
        pattern = commands.compile_pattern(rule.specifier)
        matched = (commands.matches_every if allow else commands.matches_any)(pattern, call.parts)
        return "" if matched else None
    if kind is Kind.DOMAIN:
        if action.verb is not Verb.FETCH:
            return None
        if rule.specifier is None:
            return ""
        host = domains.compile_pattern(rule.specifier)
        matched = (domains.matches_every if allow else domains.matches_any)(host, call.hosts)
        return "" if matched else None
    if kind is Kind.NAME:
        return "" if names.name_matches(rule.tool, action.tool) else None
    if kind is Kind.PARAM:
        assert rule.specifier is not None
        if rule.tool == "Bash":
            tool_ok = action.verb is Verb.EXEC and action.tool not in _NOT_BASH
        else:
            tool_ok = names.name_matches(rule.tool, action.tool)
        return "" if tool_ok and names.param_matches(rule.specifier, action.params) else None
    return None  # Kind.UNENFORCED


def _covers(rule: Rule, action: Action) -> bool:
    if rule.kind is Kind.PATH:
        return action.verb in _RULE_VERBS[rule.tool]
    if rule.kind is Kind.COMMAND:
        return action.verb is Verb.EXEC and action.tool not in _NOT_BASH
    return False


def stamp_of(
    action: Action,
    project_root: str | None,
    seen: dict[tuple[str, str | None], object] | None = None,
) -> tuple[object, ...]:
    """Which files an action's paths name right now: while it is the same, a decision made
    on the action holds. `seen` shares the stats of one moment between actions."""
    if seen is None:
        return tuple(identity(t, project_root) for t in targets(action))
    out = []
    for t in targets(action):
        if (hit := seen.get((t, project_root), seen)) is seen:
            hit = seen[(t, project_root)] = identity(t, project_root)
        out.append(hit)
    return tuple(out)


def targets(action: Action) -> tuple[str, ...]:
    if action.verb is Verb.EXEC or action.reads:
        return action.reads
    return (action.target,) if action.target else ()


PROJECT_LAYERS = ("project", "project-local")


def identity(path: str, cwd: str | None) -> object:
    """Which file a path names right now (one stat, following symlinks); None if none."""
    if path[:1] == "~":
        path = os.path.expanduser(path)
    try:
        st = os.stat(path if path[:1] == "/" else os.path.join(cwd or "/", path))
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def _path_matches(rule: Rule, paths: tuple[str, ...], project_root: str | None, home: str) -> bool:
    assert rule.specifier is not None
    if rule.layer in PROJECT_LAYERS and rule.root:
        # A `.gate/` file's `./p` and bare `p` mean its own directory's tree, also when the
        # run's root is below it (a run started in a subdirectory holding a `.gate/` too).
        project_root = rule.root
    pats = globs.compile_pattern(rule.specifier, project_root, home, rule.root)
    if not any(globs.matches(p, pats) for p in paths):
        return False
    for spec in rule.unless:
        # An exception holds only if every form of the path is exempt: a symlink named
        # .env.example that points at .env.production is still denied.
        if all(
            globs.matches(p, globs.compile_pattern(spec, project_root, home, rule.root))
            for p in paths
        ):
            return False
    return True
