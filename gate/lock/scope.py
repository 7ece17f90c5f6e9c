"""What a lock covers for this user and project: the plan `gate run --lock` hands over."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

import gate
from gate import dirs
from gate.errors import GateError
from gate.lock.plan import Plan
from gate.rules import claude
from gate.rules.layers import find_root, gate_dirs, managed_places


def plan_for(
    argv: Sequence[str], port: int, cwd: str, env: Mapping[str, str], private: Sequence[Path] = ()
) -> Plan:
    """Hide gate's dirs, show its rule files and the agent's settings read-only, keep the
    project and home reachable; files the agent's environment names in a hidden dir (the
    CA certificate) are shown, never a private key. `private` files (the team key) must be
    inside a hidden dir, else no lock is made."""
    # Created now, so the agent cannot create the user's rules file that gate would read.
    hidden = _unique(dirs.private_dir(dirs.config_dir()), dirs.private_dir(dirs.data_dir()))
    for path in map(_real, private):
        if not any(_under(path, d) for d in hidden):
            # With the team key an agent could sign a team answer ("approve") of its own.
            raise GateError(
                f"the agent could read {path} (gate's team key) inside the lock",
                hint=f"move it into {hidden[0]}, which a lock hides, and set"
                " decisions.team_key_file to the new path",
            )
    here, root = _real(cwd), _real(find_root(cwd))
    for d in hidden:
        if _under(here, d):
            raise GateError(
                f"the project {here} is inside gate's dir {d}, which a lock hides",
                hint="run the agent from the project's own directory",
            )
    # The Python that runs gate and the agent's SDK scripts stays reachable even where it
    # lives under a dir the lock covers afresh (a checkout or venv under /tmp).
    keep = _unique(here, root, Path.home(), *_python())
    made = make_placeholders(root)
    return Plan(
        argv=tuple(argv),
        port=port,
        hidden=hidden,
        shown=_shown(env, hidden),
        readonly=_readonly(root, keep),
        keep=keep,
        made=made,
        uid=os.getuid(),
        gid=os.getgid(),
    )


EMPTY_SETTINGS = b"{}\n"


def make_placeholders(root: str) -> tuple[str, ...]:
    """What the lock makes read-only but does not exist yet, created empty now so it can be
    bound read-only: the project's `.gate/` (rules gate would load from it later), Claude's
    project and user settings (`{}`). Only where none is found already, so a placeholder
    never shadows the files gate reads now. Returned in creation order, for
    `remove_placeholders`."""
    made: list[str] = []
    if not gate_dirs(root):
        _make_dir(Path(root) / ".gate", made)
    found = claude.project_files(root)
    if not found or all(f.parent == Path(root) / ".claude" for f in found):
        for name in ("settings.json", "settings.local.json"):
            _make_file(Path(root) / ".claude" / name, made)
    _make_file(claude.user_file(), made)
    return tuple(made)


def _make_dir(path: Path, made: list[str]) -> None:
    if os.path.lexists(path):
        return
    try:
        path.mkdir()
    except OSError:
        return  # a dir we cannot write to: the agent (the same user) cannot either
    made.append(str(path))


def _make_file(path: Path, made: list[str]) -> None:
    if os.path.lexists(path):
        return
    _make_dir(path.parent, made)
    try:
        with open(path, "xb") as f:
            f.write(EMPTY_SETTINGS)
    except OSError:
        return
    made.append(str(path))


def remove_placeholders(made: tuple[str, ...]) -> None:
    """Remove the placeholders the lock made, each only if still as made (the person may
    have written into one from outside meanwhile)."""
    for path in reversed(made):
        try:
            if os.path.isdir(path) and not os.path.islink(path):
                os.rmdir(path)  # only when empty
            elif Path(path).read_bytes() == EMPTY_SETTINGS:
                os.unlink(path)
        except OSError:
            continue


def _readonly(root: str, keep: tuple[str, ...]) -> tuple[str, ...]:
    paths = [*gate_dirs(root), *claude.project_files(root), claude.user_file()]
    # Policy files that may not exist yet: their nearest existing dir (/etc/gate, or /etc),
    # so a root agent cannot create one, unless that dir holds the project or home.
    for policy in (*managed_places(), claude.managed_dir() / "managed-settings.json"):
        paths += _nearest(policy, keep)
    # gate's code and the Python environment it runs from: a .pth file or an edited entry
    # point there would run the next time the person runs gate outside the lock.
    for code in (_real(Path(gate.__file__).parent), _real(sys.prefix)):
        if not _under(code, root):  # an agent working on gate itself may edit its code
            paths.append(Path(code))
    return tuple(p for p in _unique(*paths) if os.path.lexists(p))


def _nearest(path: Path, keep: tuple[str, ...]) -> list[Path]:
    for p in (path, *path.parents):
        if os.path.lexists(p):
            return [] if any(_under(k, _real(p)) for k in keep) else [p]
    return []


def _shown(env: Mapping[str, str], hidden: tuple[str, ...]) -> tuple[str, ...]:
    out = []
    for value in env.values():
        if not value.startswith("/") or not any(_under(_real(value), d) for d in hidden):
            continue
        path = _real(value)
        if not os.path.isfile(path):
            continue
        if b"PRIVATE KEY" in Path(path).read_bytes():
            raise GateError(
                f"the agent's environment names {path}, which holds a private key",
                hint="a lock shows the CA certificate, never its key",
            )
        out.append(path)
    return tuple(dict.fromkeys(out))


def _real(path: str | Path) -> str:
    return os.path.realpath(path)


def _unique(*paths: str | Path) -> tuple[str, ...]:
    return tuple(dict.fromkeys(_real(p) for p in paths))


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _python() -> tuple[str, ...]:
    """Where gate's interpreter and code live: its environment, its base installation, and
    the directory gate is imported from."""
    return _unique(sys.prefix, sys.base_prefix, Path(gate.__file__).parent.parent)
