"""Where rules come from: managed, user, shipped packs, the project and Claude Code's own
settings, merged into one policy."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from loguru import logger

from gate import dirs
from gate.errors import RuleError
from gate.rules import claude, joined, probe
from gate.rules.engine import Policy, SecretTable
from gate.rules.loader import SECRET_ACTIONS, read_file
from gate.rules.model import Effect, Rule

DEFAULT_PACKS = ("default",)
MANAGED_RULES = Path("/etc/gate/rules.yaml")
MANAGED_DIR = Path("/etc/gate/rules.d")  # more managed files, as a deployment mounts them
PROJECT_FILES = (".gate/rules.yaml", ".gate/rules.local.yaml")


def packs_dir() -> Path:
    """Shipped rule packs: `rules/` in a checkout, `gate/_packs` in an installed wheel."""
    here = _package_dir()
    for candidate in (here.parent / "rules", here / "_packs"):
        if probe.is_file(candidate / "default.yaml"):
            return candidate
    raise FileNotFoundError("gate's shipped rule packs are missing: reinstall gate")


@lru_cache(maxsize=1)
def _package_dir() -> Path:
    return Path(__file__).resolve().parent.parent  # where this gate is installed: fixed


def managed_path() -> Path:
    return Path(os.environ.get("GATE_MANAGED_RULES") or MANAGED_RULES)


def managed_places() -> list[Path]:
    """Where the managed layer is read from: $GATE_MANAGED_RULES (a file or a directory),
    else /etc/gate/rules.yaml and /etc/gate/rules.d/."""
    env = os.environ.get("GATE_MANAGED_RULES")
    return [Path(env)] if env else [MANAGED_RULES, MANAGED_DIR]


def managed_files() -> list[Path]:
    """The managed layer's files: each place's file, or a directory's `*.yaml` in name
    order."""
    files: list[Path] = []
    for place in managed_places():
        if probe.is_dir(place):
            # Hidden names are editors' and package managers' temporary files.
            files += sorted(
                (f for f in probe.listing(place, "*.yaml") if not f.name.startswith(".")),
                key=lambda f: f.name,
            )
        elif probe.exists(place):
            files.append(place)
    return files


@dataclass(frozen=True, slots=True)
class Layer:
    path: Path
    shown_as: str
    root: str | None
    name: str = "pack"  # managed, user, pack, project, project-local, claude-...
    claude: bool = False  # Claude Code's settings (JSON), not a gate rule file


def _shown(path: Path) -> str:
    home = str(Path.home())
    s = str(path)
    return "~" + s[len(home) :] if s.startswith(home + os.sep) else s


def base_layers(packs: tuple[str, ...] = DEFAULT_PACKS) -> list[Layer]:
    """Layers that do not depend on the project: managed, user, shipped packs."""
    layers = [Layer(m, str(m), None, "managed") for m in managed_files()]
    layers += [Layer(f, str(f), None, "claude-managed", True) for f in claude.managed_files()]
    if probe.exists(u := dirs.config_dir() / "rules.yaml"):
        layers.append(Layer(u, _shown(u), None, "user"))
    pdir = packs_dir()
    layers += [Layer(pdir / f"{p}.yaml", f"rules/{p}.yaml", None) for p in packs]
    return layers


def layers_for(project_root: str | None, packs: tuple[str, ...] = DEFAULT_PACKS) -> list[Layer]:
    """Every layer, in the order rules are cited: managed, user, packs, the project's gate
    files, the project's Claude Code settings, the user's Claude Code settings."""
    layers = base_layers(packs)
    if project_root:
        layers += project_layers(project_root)
        for f in claude.project_files(project_root):
            top = f.parent.parent
            prefix = "" if str(top) == project_root else _shown(top) + "/"
            local = f.name == "settings.local.json"
            layers.append(
                Layer(
                    f,
                    prefix + f".claude/{f.name}",
                    str(top),
                    "claude-local" if local else "claude-project",
                    True,
                )
            )
    if probe.is_file(u := claude.user_file()):
        layers.append(Layer(u, _shown(u), str(u.parent), "claude-user", True))
    return layers


@lru_cache(maxsize=256)
def repository_root(cwd: str) -> str:
    """The directory rules anchor to: the nearest ancestor of `cwd` holding `.gate/` or
    `.git` (an agent started in a subdirectory is still in its repository), else `cwd`."""
    return find_root(cwd)


def find_root(cwd: str) -> str:
    """`repository_root` looked up now, never from a cache: what `gate run` anchors a run
    to when it starts. A run's requests are screened with that root's rules whatever is
    created below it later (a `.gate/` the agent makes in a subdirectory is never read by
    this run; a later run started there reads it as well as every `.gate/` above it)."""
    here = Path(cwd)
    for d in (here, *here.parents):
        if (d / ".gate").is_dir() or (d / ".git").exists():
            return str(d)
    return cwd


def project_layers(root: str) -> list[Layer]:
    """The team's rule files: in the `.gate/` of the project root and of every ancestor that
    has one, nearest first. Each anchors its own patterns at its own directory, so they only
    add rules: a `.gate/` an agent left in a subdirectory can never replace the
    repository's rules for a run started there (deny and ask win over allow, and a
    project's `secrets:` can only be stricter)."""
    here = Path(root)
    layers = []
    for d in gate_dirs(root):
        top = d.parent
        prefix = "" if top == here else _shown(top) + "/"
        layers += [
            Layer(top / f, prefix + f, str(top), name)
            for f, name in zip(PROJECT_FILES, ("project", "project-local"), strict=True)
            if probe.exists(top / f)
        ]
    return layers


def gate_dirs(root: str) -> list[Path]:
    """Every `.gate/` in `root` or above it, nearest first: what gate reads rules from (and
    a lock shows read-only). One made by another user (a shared /tmp) is not read."""
    found = []
    for d in (Path(root), *Path(root).parents):
        if probe.is_dir(d / ".gate"):
            try:
                owner = (d / ".gate").stat().st_uid
            except OSError:
                continue
            if owner in (os.getuid(), 0):
                found.append(d / ".gate")
            else:
                logger.warning("rules in {} not read: another user owns it", d / ".gate")
    return found


@dataclass(frozen=True, slots=True)
class _Loaded:
    rules: tuple[Rule, ...]
    warnings: tuple[str, ...] = ()
    lockdown: bool = False
    secrets: tuple[tuple[str, str, str], ...] = ()
    # `secrets:` settings of earlier versions of this file, held until gate restarts
    held: tuple[SecretTable, ...] = ()

    def tables(self) -> tuple[SecretTable, ...]:
        now = tuple((key, action) for key, action, _where in self.secrets)
        return tuple(t for t in (now, *self.held) if t)


@dataclass(frozen=True, slots=True)
class _Cached:
    stamp: tuple[tuple[str, probe.Fact], ...]  # each layer file and its version
    env: tuple[str | None, ...]  # the variables that say where layers are
    facts: probe.Facts  # every path looked at to find the layers
    policy: Policy


class PolicyStore:
    """Policies per project root, reloaded when a rule file changes.

    A gate rule file that never loaded stops gate (a base layer, at start) or blocks the
    requests that need it (a project file). A file that loaded before and is now malformed
    keeps its previous rules, with a warning naming file:line. A malformed Claude Code
    settings file is a warning: it is the agent's file, not gate's.
    """

    def __init__(self, packs: tuple[str, ...] = DEFAULT_PACKS, *, warn: bool = True):
        self._packs = packs
        self._warn = warn
        self._lock = threading.Lock()
        self._cache: dict[str | None, _Cached] = {}
        self._good: dict[tuple[str, str, str | None], tuple[probe.Fact, _Loaded]] = {}
        self._warned: set[str] = set()
        self._joined: dict[tuple[tuple[int, str | None], ...], Policy] = {}
        self.policy_for(None)

    def stated(self, root: str, projects: tuple[str, ...]) -> Policy:
        """The rules for a request that only states it runs under `root`: its rules and
        every known project's, the strictest decision winning (gate.rules.joined). The
        same parts give the same object, so a conversation's next turn reuses its work."""
        parts: list[tuple[Policy, str | None]] = [(self.policy_for(root), root)]
        parts += [(self.policy_for(p), p) for p in sorted(set(projects) - {root})]
        key = tuple((id(p), r) for p, r in parts)
        with self._lock:
            hit = self._joined.get(key)
        if hit is not None:
            return hit
        policy = joined.join(parts)
        with self._lock:
            if len(self._joined) >= 64:
                self._joined.clear()
            self._joined[key] = policy
        return policy

    def policy_for(self, project_root: str | None) -> Policy:
        env = probe.environment()
        with self._lock:
            hit = self._cache.get(project_root)
        # Every request asks; while the files the layers were found from are unchanged,
        # the answer is a few stats (no time bound: a changed file is seen at once).
        if hit and hit.env == env and probe.unchanged(hit.facts):
            return hit.policy
        with probe.recording() as facts:
            layers = layers_for(project_root, self._packs)
            stamp = tuple((str(layer.path), probe.version(layer.path)) for layer in layers)
        if hit and hit.stamp == stamp:
            with self._lock:
                self._cache[project_root] = _Cached(stamp, env, facts, hit.policy)
            return hit.policy
        loaded = [
            self._load(layer, version) for layer, (_, version) in zip(layers, stamp, strict=True)
        ]
        policy = _merge(layers, loaded)
        with self._lock:
            self._cache[project_root] = _Cached(stamp, env, facts, policy)
        self._report(policy)
        logger.debug("policy loaded: {} rules from {} files", len(policy.rules), len(layers))
        return policy

    def _load(self, layer: Layer, version: probe.Fact) -> _Loaded:
        key = (str(layer.path), layer.shown_as, layer.root)
        with self._lock:
            prev = self._good.get(key)
        if prev and prev[0] == version:
            return prev[1]
        try:
            loaded = _read(layer)
        except RuleError as exc:
            problem = exc.diagnostics().replace("\n  hint:", "; hint:")
            if prev is not None:
                # Reload: the last good rules stay in force; a typo never opens the gate.
                return _Loaded(
                    prev[1].rules,
                    (
                        *prev[1].warnings,
                        f"{problem} (gate keeps this file's previous rules until it is fixed)",
                    ),
                    prev[1].lockdown,
                    prev[1].secrets,
                    prev[1].held,
                )
            if layer.claude:
                return _Loaded(
                    (),
                    (
                        f"{problem} (gate enforces none of this Claude Code"
                        " settings file's rules until it is fixed)",
                    ),
                )
            raise
        if prev is not None:
            loaded = _held(layer, prev[1], loaded)
        with self._lock:
            self._good[key] = (version, loaded)
        return loaded

    def _report(self, policy: Policy) -> None:
        notes = list(policy.warnings)
        for rule in policy.rules:
            if rule.effect is not Effect.ALLOW and (why := rule.unenforced):
                notes.append(f"rule {rule.text} ({rule.where}) is not enforced at the wire: {why}")
        with self._lock:
            fresh = [n for n in notes if n not in self._warned]
            self._warned.update(fresh)
        if self._warn:
            for note in fresh:
                logger.warning("{}", note)


def _held(layer: Layer, before: _Loaded, now: _Loaded) -> _Loaded:
    """A rule file changed while gate runs. Tightening applies at once; a deny or ask rule
    that is gone (removed, turned into an allow or ask, given a new exception, or dropped as
    invalid) stays in force until gate restarts: the agent gate polices may edit this file,
    so only a person (who restarts gate) can loosen it."""
    same = {_identity(r) for r in now.rules}
    held = tuple(
        r for r in before.rules if r.effect is not Effect.ALLOW and _identity(r) not in same
    )
    notes = tuple(
        f"rule {r.text} was removed from {layer.shown_as} while gate runs; it stays"
        " in force until gate is restarted (a person must confirm loosening a rule)"
        for r in held
    )
    # `secrets:` the same way: each finding gets the stricter of what the file said before
    # and what it says now, so a tightening applies at once and a loosening waits.
    current = tuple((key, action) for key, action, _where in now.secrets)
    kept = tuple(t for t in dict.fromkeys(before.tables()) if t != current)
    if _loosens(before.secrets, now.secrets):
        notes += (
            f"secrets: settings loosened in {layer.shown_as} while gate runs; the"
            " previous ones stay in force until gate is restarted (a person must"
            " confirm loosening a rule)",
        )
    if not held and not notes and not kept:
        return now
    return _Loaded(now.rules + held, now.warnings + notes, now.lockdown, now.secrets, kept)


def _loosens(
    before: tuple[tuple[str, str, str], ...], now: tuple[tuple[str, str, str], ...]
) -> bool:
    """Whether a `secrets:` setting was removed or loosened, or a new one added that could
    loosen what a tier said (any new setting but `block`)."""
    was = {key: action for key, action, _ in before}
    new = {key: action for key, action, _ in now}
    rank = SECRET_ACTIONS.index
    return any(k not in new or rank(new[k]) > rank(a) for k, a in was.items()) or any(
        k not in was and a != "block" for k, a in new.items()
    )


def _identity(rule: Rule) -> tuple[object, ...]:
    """A rule as what it protects, wherever in its file it is written."""
    return (rule.effect, rule.tool, rule.specifier, rule.unless, rule.root)


def _read(layer: Layer) -> _Loaded:
    if layer.claude:
        rules, warnings = claude.read(layer.path, layer.shown_as, layer.root, layer.name)
        return _Loaded(rules, warnings)
    loaded = read_file(layer.path, shown_as=layer.shown_as, root=layer.root, layer=layer.name)
    if loaded.lockdown and layer.name != "managed":
        raise RuleError(
            "lockdown: is read from the managed rule file only",
            where=f"{layer.shown_as}:{loaded.lockdown_line}",
            hint=f"move it to {managed_path()}, or delete the line",
        )
    return _Loaded(loaded.rules, (), loaded.lockdown, loaded.secrets)


def _merge(layers: list[Layer], loaded: list[_Loaded]) -> Policy:
    """One policy. Under a managed `lockdown: true`, allow rules of other layers are set
    aside: only the organisation may allow anything."""
    lockdown = any(lo.lockdown for lo in loaded)
    rules: list[Rule] = []
    ignored: list[Rule] = []
    for layer, lo in zip(layers, loaded, strict=True):
        for rule in lo.rules:
            loosens = rule.effect is Effect.ALLOW and layer.name != "managed"
            (ignored if lockdown and loosens else rules).append(rule)
    warnings = tuple(w for lo in loaded for w in lo.warnings)
    return Policy(tuple(rules), tuple(ignored), warnings, lockdown, _secrets(layers, loaded))


def _secrets(
    layers: list[Layer], loaded: list[_Loaded]
) -> tuple[tuple[str, tuple[SecretTable, ...]], ...]:
    """Each layer's `secrets:` settings, with its role: the shipped packs give the defaults,
    the managed and user files (a person's) set the policy, and the project's files (which
    the agent may write) can only make it stricter; see Policy.secret_action."""
    out = []
    for layer, lo in zip(layers, loaded, strict=True):
        if tables := lo.tables():
            role = (
                "default"
                if layer.name == "pack"
                else "trusted"
                if layer.name in ("managed", "user")
                else "project"
            )
            out.append((role, tables))
    return tuple(out)
