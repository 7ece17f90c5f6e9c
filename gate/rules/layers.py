"""Where rules come from: managed, user, shipped packs, the project and Claude Code's own
settings, merged into one policy."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from loguru import logger

from gate import dirs
from gate.errors import RuleError
from gate.rules import claude, joined, probe
from gate.rules import held as held_rules
from gate.rules.engine import Policy, SecretTable
from gate.rules.held import LayerKey, Loosening
from gate.rules.loader import read_file
from gate.rules.model import Effect, Rule, SecretAction

DEFAULT_PACKS = ("default",)
MANAGED_RULES = Path("/etc/gate/rules.yaml")
MANAGED_DIR = Path("/etc/gate/rules.d")  # more managed files, as a deployment mounts them
PROJECT_FILES = (".gate/rules.yaml", ".gate/rules.local.yaml")
# How long (seconds) the serving gate trusts its last look at the rule files: within it a
# request reuses the policy without a stat; after it the next request looks again. Every
# request looking cost 4% of gate's CPU under load (bench/latency.py --concurrent), and a
# rule file edited by a person is in force for every request that arrives more than this
# after the edit. A loosening edit never takes effect by itself anyway (a person is asked).
RECHECK_AFTER = 0.1


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


@dataclass(frozen=True, slots=True, kw_only=True)
class Layer:
    path: Path
    shown_as: str
    root: str | None
    name: str = "pack"  # managed, user, pack, project, project-local, claude-...
    claude: bool = False  # Claude Code's settings (JSON), not a gate rule file


_EVERY_PROJECT = ("managed", "user", "claude-managed", "claude-user")


def _key(layer: Layer) -> LayerKey:
    return (str(layer.path), layer.shown_as, layer.root)


def _shown(path: Path) -> str:
    home = str(Path.home())
    s = str(path)
    return "~" + s[len(home) :] if s.startswith(home + os.sep) else s


def base_layers(packs: tuple[str, ...] = DEFAULT_PACKS) -> list[Layer]:
    """Layers that do not depend on the project: managed, user, shipped packs."""
    layers = [Layer(path=m, shown_as=str(m), root=None, name="managed") for m in managed_files()]
    layers += [
        Layer(path=f, shown_as=str(f), root=None, name="claude-managed", claude=True)
        for f in claude.managed_files()
    ]
    if probe.exists(u := dirs.config_dir() / "rules.yaml"):
        layers.append(Layer(path=u, shown_as=_shown(u), root=None, name="user"))
    pdir = packs_dir()
    layers += [Layer(path=pdir / f"{p}.yaml", shown_as=f"rules/{p}.yaml", root=None) for p in packs]
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
                    path=f,
                    shown_as=prefix + f".claude/{f.name}",
                    root=str(top),
                    name="claude-local" if local else "claude-project",
                    claude=True,
                )
            )
    if probe.is_file(u := claude.user_file()):
        layers.append(
            Layer(path=u, shown_as=_shown(u), root=str(u.parent), name="claude-user", claude=True)
        )
    return layers


MAX_ROOTS = 256  # working directories whose root is remembered


class Roots:
    """The directory rules anchor to, per working directory, remembered by the store that
    owns it (PolicyStore.roots): the nearest ancestor of `cwd` holding `.gate/` or `.git`
    (an agent started in a subdirectory is still in its repository), else `cwd`.

    Remembered, but never past a change: a `.git` or `.gate/` made (or removed) in any
    directory between `cwd` and its root changes that directory's mtime, and each call
    checks those mtimes (a few stats, against the walk up with a `.git` and `.gate` probe
    per ancestor). The mtimes are read before the walk, so a change during it is seen by
    the next call."""

    def __init__(self) -> None:
        # cwd -> (its root, and each directory from cwd up to that root with its mtime then)
        self._known: dict[str, tuple[str, tuple[tuple[str, int], ...]]] = {}
        self._lock = threading.Lock()

    def of(self, cwd: str) -> str:
        hit = self._known.get(cwd)
        if hit is not None and all(_mtime(d) == m for d, m in hit[1]):
            return hit[0]
        chain = dirs.owned_ancestors(Path(cwd))
        before = [_mtime(str(d)) for d in chain]
        upto = next((i + 1 for i, d in enumerate(chain) if _marks_root(d)), None)
        root = str(chain[upto - 1]) if upto else cwd
        # Up to the root found; every directory up to the first one anyone may write in.
        stamp = tuple(zip(map(str, chain[:upto]), before[:upto], strict=True))
        with self._lock:
            if len(self._known) >= MAX_ROOTS:
                self._known.clear()
            self._known[cwd] = (root, stamp)
        return root


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return -1


def find_root(cwd: str) -> str:
    """The directory rules anchor to (as `Roots.of`), looked up now, never from a cache:
    what a command run once, and `gate run` when it starts, anchor to. A run's requests
    are screened with that root's rules whatever is created below it later (a `.gate/` the
    agent makes in a subdirectory is never read by this run; a later run started there
    reads it as well as every `.gate/` above it)."""
    return next((str(d) for d in dirs.owned_ancestors(Path(cwd)) if _marks_root(d)), cwd)


def _marks_root(d: Path) -> bool:
    return (d / ".gate").is_dir() or (d / ".git").exists()


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
            Layer(path=top / f, shown_as=prefix + f, root=str(top), name=name)
            for f, name in zip(PROJECT_FILES, ("project", "project-local"), strict=True)
            if probe.exists(top / f)
        ]
    return layers


def gate_dirs(root: str) -> list[Path]:
    """Every `.gate/` in `root` or above it (not in or above a directory anyone may write
    in), nearest first: what gate reads rules from (and a lock shows read-only). One made
    by another user is not read."""
    found = []
    for d in dirs.owned_ancestors(Path(root)):
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


@dataclass(frozen=True, slots=True, kw_only=True)
class _Loaded:
    rules: tuple[Rule, ...]
    warnings: tuple[str, ...] = ()
    lockdown: bool = False
    secrets: tuple[tuple[str, SecretAction, str], ...] = ()
    # `secrets:` settings of earlier versions of this file, held until a person confirms
    # the change or gate restarts
    held: tuple[SecretTable, ...] = ()

    def tables(self) -> tuple[SecretTable, ...]:
        now = tuple((key, action) for key, action, _where in self.secrets)
        return tuple(t for t in (now, *self.held) if t)


# A file's rules in force, and what they hold back that a person may confirm (None: nothing)
_Held = tuple[_Loaded, Loosening | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class _Cached:
    stamp: tuple[tuple[str, probe.Fact], ...]  # each layer file and its version
    env: tuple[str | None, ...]  # the variables that say where layers are
    facts: probe.Facts  # every path looked at to find the layers
    policy: Policy
    checked: float = 0.0  # when the facts were last found unchanged (the store's clock)
    # The layers it was built from, files removed since whose rules are held included
    layers: tuple[Layer, ...] = ()
    fresh: bool = True  # False: rebuild it (a person confirmed loosening a file's rules)


class PolicyStore:
    """Policies per project root, reloaded when a rule file changes.

    A gate rule file that never loaded stops gate (a base layer, at start) or blocks the
    requests that need it (a project file). A file that loaded before and is now malformed
    keeps its previous rules, with a warning naming file:line. A malformed Claude Code
    settings file is a warning: it is the agent's file, not gate's. A file that changed so
    as to loosen the rules keeps what it loosens until `confirm` says a person agreed.
    """

    def __init__(
        self,
        packs: tuple[str, ...] = DEFAULT_PACKS,
        *,
        warn: bool = True,
        recheck_after: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        """`recheck_after`: seconds a look at the rule files is trusted (0: every call
        looks; the serving gate passes RECHECK_AFTER)."""
        self._packs = packs
        self._warn = warn
        self._recheck_after = recheck_after
        self._clock = clock
        self._lock = threading.Lock()
        self._cache: dict[str | None, _Cached] = {}
        self._good: dict[LayerKey, tuple[probe.Fact, _Loaded]] = {}
        # Per file changed so as to loosen the rules: what it would loosen, and the version
        # and rules that take effect once a person confirms it.
        self._holds: dict[LayerKey, tuple[Loosening, probe.Fact, _Loaded]] = {}
        self._declined: dict[LayerKey, Loosening] = {}  # a person said no: not asked again
        # Files every project reads (managed, user, Claude Code's user and managed
        # settings) removed while their rules are held: a project first seen since holds
        # them too.
        self._removed: dict[LayerKey, Layer] = {}
        # Told (from whichever thread reloads, with the store's lock held: it must only
        # hand the news on) what each changed file would now loosen; None: nothing to ask.
        self.on_loosen: Callable[[LayerKey, Loosening | None], None] | None = None
        self._warned: set[str] = set()
        self._joined: dict[tuple[tuple[int, str | None], ...], Policy] = {}
        self.roots = Roots()  # each request's working directory's root
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
        # the answer is a few stats, and none while the last look is recent enough.
        if hit and hit.fresh and hit.env == env:
            now = self._clock()
            if now - hit.checked < self._recheck_after:
                return hit.policy
            if probe.unchanged(hit.facts):
                if self._recheck_after > 0:
                    with self._lock:
                        if self._cache.get(project_root) is hit:
                            self._cache[project_root] = replace(hit, checked=now)
                return hit.policy
        started = self._clock()
        with probe.recording() as facts:
            layers = layers_for(project_root, self._packs)
            stamp = tuple((str(layer.path), probe.version(layer.path)) for layer in layers)
        if hit and hit.fresh and hit.stamp == stamp:
            with self._lock:
                self._cache[project_root] = replace(hit, env=env, facts=facts, checked=started)
            return hit.policy
        loaded = [
            self._load(layer, version) for layer, (_, version) in zip(layers, stamp, strict=True)
        ]
        # A rule file removed while gate runs loosens like one emptied: its rules stay.
        here = {_key(layer) for layer in layers}
        with self._lock:
            removed = list(self._removed.values())
        for layer in dict.fromkeys((*(hit.layers if hit and hit.env == env else ()), *removed)):
            gone = None if _key(layer) in here or layer.name == "pack" else self._gone(layer)
            if gone is not None:
                layers.append(layer)
                loaded.append(gone)
        policy = _merge(layers, loaded)
        with self._lock:
            self._cache[project_root] = _Cached(
                stamp=stamp,
                env=env,
                facts=facts,
                policy=policy,
                layers=tuple(layers),
                checked=started,
            )
        self._report(policy)
        logger.debug("policy loaded: {} rules from {} files", len(policy.rules), len(layers))
        return policy

    def _gone(self, layer: Layer) -> _Loaded | None:
        """The rules still in force of a file removed since it was loaded (None: none)."""
        key = _key(layer)
        with self._lock:
            prev = self._good.get(key)
        if prev is None or not (prev[1].rules or prev[1].tables()):
            with self._lock:
                self._removed.pop(key, None)
            return None
        if prev[0] is None:  # seen removed before: what was held then still is
            return prev[1]
        in_force, loosening = _held(layer, key, prev[1], _Loaded(rules=()))
        with self._lock:
            self._good[key] = (None, in_force)
            self._hold(key, loosening, None, _Loaded(rules=()))
            if loosening is not None and layer.name in _EVERY_PROJECT:
                self._removed[key] = layer
        return in_force if loosening is not None else None

    def _load(self, layer: Layer, version: probe.Fact) -> _Loaded:
        key = _key(layer)
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
                    rules=prev[1].rules,
                    warnings=(
                        *prev[1].warnings,
                        f"{problem} (gate keeps this file's previous rules until it is fixed)",
                    ),
                    lockdown=prev[1].lockdown,
                    secrets=prev[1].secrets,
                    held=prev[1].held,
                )
            if layer.claude:
                return _Loaded(
                    rules=(),
                    warnings=(
                        f"{problem} (gate enforces none of this Claude Code"
                        " settings file's rules until it is fixed)",
                    ),
                )
            raise
        if prev is None:
            with self._lock:
                self._good[key] = (version, loaded)
            return loaded
        in_force, loosening = _held(layer, key, prev[1], loaded)
        with self._lock:
            self._good[key] = (version, in_force)
            self._hold(key, loosening, version, loaded)
        return in_force

    def _hold(
        self, key: LayerKey, loosening: Loosening | None, version: probe.Fact, fresh: _Loaded
    ) -> None:
        """Note what a file's new version would loosen (the lock is held)."""
        if loosening is None:
            self._holds.pop(key, None)
            self._declined.pop(key, None)
        else:
            self._holds[key] = (loosening, version, fresh)
        if self.on_loosen is not None:
            declined = loosening is not None and self._declined.get(key) == loosening
            self.on_loosen(key, None if declined else loosening)

    def loosenings(self) -> list[Loosening]:
        """What changed rule files would loosen, held until a person confirms it."""
        with self._lock:
            return [lo for lo, _, _ in self._holds.values()]

    def confirm(self, loosening: Loosening, approve: bool) -> bool:
        """A person's answer to a Loosening: approved, the file's rules as they are now take
        effect (the next request is decided by them); declined, the held rules stay in
        force until the file changes again or gate restarts. False (nothing done) when the
        file changed since the question was put: the answer was about another edit."""
        with self._lock:
            hold = self._holds.get(loosening.key)
            if hold is None or hold[0] != loosening:
                return False
            if not approve:
                self._declined[loosening.key] = loosening
                return True
            _, version, fresh = self._holds.pop(loosening.key)
            self._declined.pop(loosening.key, None)
            self._good[loosening.key] = (version, fresh)
            # Every policy built with the held rules is rebuilt (keeping the layers they
            # were built from: a removed file's held rules are found from them).
            self._cache = {r: replace(c, fresh=False) for r, c in self._cache.items()}
            self._joined.clear()
        logger.warning(
            "rules of {} loosened: a person confirmed the change ({} rule(s) no longer held)",
            loosening.file,
            len(loosening.changes),
        )
        return True

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


def _held(layer: Layer, key: LayerKey, before: _Loaded, now: _Loaded) -> _Held:
    """A rule file changed while gate runs. Tightening applies at once; a deny or ask rule
    that is gone (removed, turned into an allow or ask, given a new exception, or dropped as
    invalid) stays in force, and so do `secrets:` settings made looser: the agent gate
    polices may edit this file, so only a person may loosen it, by answering the question
    the Loosening is (PolicyStore.confirm), or by restarting gate."""
    held = held_rules.dropped(before.rules, now.rules)
    # `secrets:` the same way: each finding gets the stricter of what the file said before
    # and what it says now, so a tightening applies at once and a loosening waits.
    current = tuple((k, action) for k, action, _where in now.secrets)
    kept = tuple(t for t in dict.fromkeys(before.tables()) if t != current)
    looser = tuple(t for t in kept if held_rules.loosens(t, current))
    if not held and not kept:
        return now, None
    notes = tuple(
        f"rule {r.text} was removed or weakened in {layer.shown_as} while gate runs (it"
        f" is at {r.where}); it stays in force until a person confirms the change"
        " (`gate pending`) or gate is restarted"
        for r in held
    )
    if looser:
        notes += (
            f"secrets: settings loosened in {layer.shown_as} while gate runs; the previous"
            " ones stay in force until a person confirms the change (`gate pending`) or"
            " gate is restarted",
        )
    loosening = (
        Loosening(
            key=key,
            file=layer.shown_as,
            layer=layer.name,
            changes=held_rules.changes(held, now.rules),
            secrets_before=looser,
            secrets_now=current if looser else (),
        )
        if held or looser
        else None
    )
    return _Loaded(
        rules=now.rules + held,
        warnings=now.warnings + notes,
        lockdown=now.lockdown,
        secrets=now.secrets,
        held=kept,
    ), loosening


def _read(layer: Layer) -> _Loaded:
    if layer.claude:
        rules, warnings = claude.read(layer.path, layer.shown_as, layer.root, layer.name)
        return _Loaded(rules=rules, warnings=warnings)
    loaded = read_file(layer.path, shown_as=layer.shown_as, root=layer.root, layer=layer.name)
    if loaded.lockdown and layer.name != "managed":
        raise RuleError(
            "lockdown: is read from the managed rule file only",
            where=f"{layer.shown_as}:{loaded.lockdown_line}",
            hint=f"move it to {managed_path()}, or delete the line",
        )
    return _Loaded(
        rules=loaded.rules, warnings=(), lockdown=loaded.lockdown, secrets=loaded.secrets
    )


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
    return Policy(
        rules=tuple(rules),
        ignored=tuple(ignored),
        warnings=warnings,
        lockdown=lockdown,
        secrets=_secrets(layers, loaded),
    )


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
