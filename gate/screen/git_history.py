"""Values denied files held in earlier commits: `git show REV:.env` and `git log -p` print
them, and a rotated key may still work, so they are looked for like today's."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

from loguru import logger

from gate.agents.actions import Action, Verb
from gate.rules.engine import Policy
from gate.rules.model import Effect
from gate.screen.denied_walk import Source
from gate.screen.units import units_of

MAX_COMMITS = 500  # commits looked at for the paths they touched
MAX_PATCH_BYTES = 4 << 20  # of `git log -p` output read for the denied paths' old lines
TIMEOUT = 10.0


def history_units(policy: Policy, root: str) -> dict[str, Source]:
    """Units of every version of every file the policy denies that the repository's
    history holds (bounded: the last MAX_COMMITS commits of every ref)."""
    if not os.path.exists(os.path.join(root, ".git")):
        return {}
    denied: dict[str, Source] = {}
    for rel in _touched(root):
        path = os.path.join(root, rel)
        decision = policy.decide(Action(verb=Verb.READ, tool="Read", target=path), root)
        if decision.rule is not None and decision.effect in (Effect.DENY, Effect.ASK):
            denied[rel] = Source(path, decision.rule)
    units: dict[str, Source] = {}
    for rel, source in denied.items():
        for unit in units_of("\n".join(_old_lines(root, rel))):
            units.setdefault(unit, source)
    return units


# The repository's own config is the agent's to write: nothing in it may run a program
# (a diff driver's textconv, a signature check's gpg.program) nor change what is read.
_UNRUN = ("--no-textconv", "--no-ext-diff", "--no-show-signature")


def _git(root: str, *args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", root, args[0], *_UNRUN, *args[1:]],
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        logger.warning("git history of denied files not read: {}", type(exc).__name__)
        return ""
    return proc.stdout[:MAX_PATCH_BYTES].decode("utf-8", "replace") if proc.returncode == 0 else ""


def _touched(root: str) -> list[str]:
    out = _git(root, "log", "--all", f"-n{MAX_COMMITS}", "--format=", "--name-only", "--no-renames")
    return list(dict.fromkeys(p for p in out.splitlines() if p))


def _old_lines(root: str, rel: str) -> Iterator[str]:
    """Every line any commit added to or removed from the file."""
    out = _git(
        root,
        "log",
        "--all",
        f"-n{MAX_COMMITS}",
        "-p",
        "--format=",
        "--no-color",
        "--",
        rel,
    )
    for line in out.splitlines():
        if line[:1] in "+-" and not line.startswith(("+++", "---")):
            yield line[1:]
