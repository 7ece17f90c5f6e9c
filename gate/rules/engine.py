"""Decide an action against a policy: deny > ask > allow, whichever layer a rule came from."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from gate.agents.actions import Action, Verb
from gate.rules import globs
from gate.rules.model import Effect, Rule

# Which rule tools cover which verbs. A Read rule also covers search tools (Grep, Glob, LS)
# and edits of the same path: an edit's result shows the file's content.
_RULE_VERBS: dict[str, frozenset[Verb]] = {
    "Read": frozenset({Verb.READ, Verb.SEARCH, Verb.EDIT}),
    "Edit": frozenset({Verb.EDIT}),
}
_ORDER = (Effect.DENY, Effect.ASK, Effect.ALLOW)


@dataclass(frozen=True, slots=True)
class Decision:
    effect: Effect | None  # None: no rule matched
    rule: Rule | None


_CACHE_MAX = 20_000


@dataclass(frozen=True, slots=True)
class Policy:
    rules: tuple[Rule, ...]
    # Agents resend the whole history every turn: each call is decided once per policy.
    _cache: dict[tuple[Action, str | None], Decision] = field(
        default_factory=dict, compare=False, repr=False)

    def decide(self, action: Action, project_root: str | None) -> Decision:
        key = (action, project_root)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._decide(action, project_root)
            if len(self._cache) >= _CACHE_MAX:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def _decide(self, action: Action, project_root: str | None) -> Decision:
        home = os.path.expanduser("~")
        paths = globs.candidates(action.target, project_root) if action.target else ()
        for effect in _ORDER:
            for rule in self.rules:
                if rule.effect is effect and _matches(rule, action, paths, project_root, home):
                    return Decision(effect, rule)
        return Decision(None, None)

    def by_effect(self, effect: Effect) -> Sequence[Rule]:
        return [r for r in self.rules if r.effect is effect]


def _matches(rule: Rule, action: Action, paths: tuple[str, ...], project_root: str | None,
             home: str) -> bool:
    verbs = _RULE_VERBS.get(rule.tool)
    if verbs is not None:
        if action.verb not in verbs or action.target is None:
            return False
        if rule.specifier is None:
            return True
        return _path_matches(rule, paths, project_root, home)
    # Other tools (Bash, WebFetch, mcp__...) match by tool name until their specifier
    # semantics are implemented; a bare name matches every use.
    return rule.specifier is None and rule.tool == action.tool


def _path_matches(rule: Rule, paths: tuple[str, ...], project_root: str | None,
                  home: str) -> bool:
    assert rule.specifier is not None
    pats = globs.compile_pattern(rule.specifier, project_root, home, rule.root)
    if not any(globs.matches(p, pats) for p in paths):
        return False
    for spec in rule.unless:
        if any(globs.matches(p, globs.compile_pattern(spec, project_root, home, rule.root))
               for p in paths):
            return False
    return True
