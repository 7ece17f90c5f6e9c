"""Where rules come from: managed, project, user and shipped packs, merged into one policy."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from loguru import logger

from gate import dirs
from gate.rules.engine import Policy
from gate.rules.loader import load_file
from gate.rules.model import ENFORCED_TOOLS, Effect, Rule

DEFAULT_PACKS = ("default",)
MANAGED_RULES = Path("/etc/gate/rules.yaml")
PROJECT_FILES = (".gate/rules.yaml", ".gate/rules.local.yaml")


def packs_dir() -> Path:
    """Shipped rule packs: `rules/` in a checkout, `gate/_packs` in an installed wheel."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "rules", here / "_packs"):
        if (candidate / "default.yaml").is_file():
            return candidate
    raise FileNotFoundError("gate's shipped rule packs are missing: reinstall gate")


def managed_path() -> Path:
    return Path(os.environ.get("GATE_MANAGED_RULES") or MANAGED_RULES)


@dataclass(frozen=True, slots=True)
class Layer:
    path: Path
    shown_as: str
    root: str | None


def _shown(path: Path) -> str:
    home = str(Path.home())
    s = str(path)
    return "~" + s[len(home):] if s.startswith(home + os.sep) else s


def base_layers(packs: tuple[str, ...] = DEFAULT_PACKS) -> list[Layer]:
    """Layers that do not depend on the project: managed, user, shipped packs."""
    layers = []
    if (m := managed_path()).exists():
        layers.append(Layer(m, str(m), None))
    if (u := dirs.config_dir() / "rules.yaml").exists():
        layers.append(Layer(u, _shown(u), None))
    pdir = packs_dir()
    layers += [Layer(pdir / f"{p}.yaml", f"rules/{p}.yaml", None) for p in packs]
    return layers


@lru_cache(maxsize=256)
def repository_root(cwd: str) -> str:
    """The directory rules anchor to: the nearest ancestor of `cwd` holding `.gate/` or
    `.git` (an agent started in a subdirectory is still in its repository), else `cwd`."""
    here = Path(cwd)
    for d in (here, *here.parents):
        if (d / ".gate").is_dir() or (d / ".git").exists():
            return str(d)
    return cwd


def project_layers(root: str) -> list[Layer]:
    """The team's rule files: in `.gate/` of the project root or its nearest ancestor that
    has one (an agent started in a subdirectory still gets its repository's rules), not
    above the repository's top (`.git`)."""
    here = Path(root)
    for d in (here, *here.parents):
        if (d / ".gate").is_dir():
            prefix = "" if d == here else _shown(d) + "/"
            return [Layer(d / f, prefix + f, str(d)) for f in PROJECT_FILES if (d / f).exists()]
        if (d / ".git").exists():
            break
    return []


class PolicyStore:
    """Policies per project root, reloaded when a rule file changes.

    A base layer that fails to load at start stops gate (the caller sees a RuleError). A
    project file that is malformed raises at request time, which blocks the request.
    """

    def __init__(self, packs: tuple[str, ...] = DEFAULT_PACKS, *, warn: bool = True):
        self._packs = packs
        self._warn = warn
        self._lock = threading.Lock()
        self._cache: dict[str | None, tuple[tuple[tuple[str, float], ...], Policy]] = {}
        self.policy_for(None)

    def policy_for(self, project_root: str | None) -> Policy:
        layers = base_layers(self._packs)
        if project_root:
            layers += project_layers(project_root)
        stamp = tuple((str(layer.path), _mtime(layer.path)) for layer in layers)
        with self._lock:
            hit = self._cache.get(project_root)
            if hit and hit[0] == stamp:
                return hit[1]
        rules: list[Rule] = []
        for layer in layers:
            rules += load_file(layer.path, shown_as=layer.shown_as, root=layer.root)
        policy = Policy(tuple(rules))
        with self._lock:
            fresh = all(hit[1].rules != policy.rules for hit in self._cache.values())
            self._cache[project_root] = (stamp, policy)
        if fresh and self._warn:
            for rule in rules:
                # A bare tool name (Bash) is enforced: every result of that tool is withheld.
                if (rule.effect is not Effect.ALLOW and rule.tool not in ENFORCED_TOOLS
                        and rule.specifier is not None):
                    logger.warning("rule {} ({}) is not enforced at the wire by this gate yet",
                                   rule.text, rule.where)
        logger.debug("policy loaded: {} rules from {} files", len(rules), len(layers))
        return policy


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime_ns / 1e9
    except OSError:
        return -1.0
