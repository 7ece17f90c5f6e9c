"""Decide an action against a policy: deny > ask > allow, whichever layer a rule came from."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from gate.agents.actions import Action, Verb
from gate.rules import globs
from gate.rules.model import Effect, Rule

# Which rule tools cover which verbs. A Read rule also covers search tools (Grep, Glob, LS),
# edits of the same path (an edit's result shows the file's content) and shell commands
# that read the path (`cat .env`).
_RULE_VERBS: dict[str, frozenset[Verb]] = {
    "Read": frozenset({Verb.READ, Verb.SEARCH, Verb.EDIT, Verb.EXEC}),
    "Edit": frozenset({Verb.EDIT}),
}
_ORDER = (Effect.DENY, Effect.ASK, Effect.ALLOW)
_CACHE_MAX = 20_000


@dataclass(frozen=True, slots=True)
class Decision:
    effect: Effect | None  # None: no rule matched
    rule: Rule | None
    path: str | None = None  # the path the rule matched, when it is a path rule


@dataclass(frozen=True, slots=True)
class Policy:
    rules: tuple[Rule, ...]
    # Agents resend the whole history every turn: each call is decided once per policy.
    # A cached decision is reused only while the files it looked at are the same files
    # (a path later replaced by a symlink to .env is decided again).
    _cache: dict[tuple[Action, str | None], tuple[tuple[object, ...], Decision]] = field(
        default_factory=dict, compare=False, repr=False)

    def decide(self, action: Action, project_root: str | None) -> Decision:
        key = (action, project_root)
        stamp = tuple(_identity(t, project_root) for t in _targets(action))
        hit = self._cache.get(key)
        if hit is not None and hit[0] == stamp:
            return hit[1]
        decision = self._decide(action, project_root)
        if len(self._cache) >= _CACHE_MAX:
            self._cache.clear()
        self._cache[key] = (stamp, decision)
        return decision

    def by_effect(self, effect: Effect) -> Sequence[Rule]:
        return [r for r in self.rules if r.effect is effect]

    def _decide(self, action: Action, project_root: str | None) -> Decision:
        home = os.path.expanduser("~")
        # Each path the action touches, as named and as resolved (symlinks).
        paths = [(t, globs.candidates(t, project_root)) for t in _targets(action)]
        for effect in _ORDER:
            for rule in self.rules:
                if rule.effect is not effect:
                    continue
                verbs = _RULE_VERBS.get(rule.tool)
                if verbs is None:
                    # Bash(...), WebFetch(...), mcp__...: by tool name until their specifier
                    # semantics are implemented; a bare name matches every use.
                    if rule.specifier is None and rule.tool == action.tool:
                        return Decision(effect, rule)
                    continue
                if action.verb not in verbs:
                    continue
                for target, candidates in paths:
                    if rule.specifier is None or _path_matches(rule, candidates,
                                                               project_root, home):
                        return Decision(effect, rule, target)
        return Decision(None, None)


def _targets(action: Action) -> tuple[str, ...]:
    if action.verb is Verb.EXEC:
        return action.reads
    return (action.target,) if action.target else ()


def _identity(path: str, cwd: str | None) -> object:
    """Which file a path names right now (one stat, following symlinks); None if none."""
    try:
        st = os.stat(os.path.join(cwd or "/", os.path.expanduser(path)))
    except (OSError, ValueError):
        return None
    return (st.st_dev, st.st_ino)


def _path_matches(rule: Rule, paths: tuple[str, ...], project_root: str | None,
                  home: str) -> bool:
    assert rule.specifier is not None
    pats = globs.compile_pattern(rule.specifier, project_root, home, rule.root)
    if not any(globs.matches(p, pats) for p in paths):
        return False
    for spec in rule.unless:
        # An exception holds only if every form of the path is exempt: a symlink named
        # .env.example that points at .env.production is still denied.
        if all(globs.matches(p, globs.compile_pattern(spec, project_root, home, rule.root))
               for p in paths):
            return False
    return True
