"""The bounded walk that finds the files deny rules cover, and the units they hold."""

from __future__ import annotations

import base64
import hashlib
import os
import re
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field

from loguru import logger

from gate.agents.actions import Action, Verb
from gate.rules.engine import PROJECT_LAYERS, Policy
from gate.rules.model import Effect, Rule
from gate.screen.units import units_of

MAX_FILES_WALKED = 20_000  # default: directory entries looked at per walk
MAX_FILE_BYTES = 256 << 10  # default: a larger denied file contributes its first part
# Directories whose change is noticed before the next request: a stat each per request
# (about 1 to 5 µs), the shallowest first; deeper ones are seen by the 5-second refresh.
MAX_DIRS_STAMPED = 200
_SKIP_DIRS = frozenset(
    {
        ".git",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        "dist",
        "build",
        "target",
        ".next",
        ".cache",
        ".gradle",
        ".idea",
    }
)
_GLOB_CHARS = re.compile(r"[*?\[{]")


@dataclass(frozen=True, slots=True)
class Source:
    path: str
    rule: Rule

    def placeholder(self) -> str:
        name = os.path.basename(self.path)
        return f"[gate: withheld a value from {name} (rule {self.rule.text}, {self.rule.where})]"


@dataclass(frozen=True, slots=True)
class _Unscreened(Source):
    def placeholder(self) -> str:
        return (
            "[gate: withheld compressed data that inflates to more than gate screens for"
            " denied files' values]"
        )


# What a hit on a compressed blob too large to read is attributed to (no file is known).
UNSCREENED = _Unscreened(
    "(compressed data too large to screen)",
    Rule(effect=Effect.DENY, tool="Read", specifier=None, source="gate", line=0, root=None),
)


@dataclass(frozen=True, slots=True)
class Limits:
    """How much the denied-file walk may read (config.yaml `screen:`)."""

    max_files: int = MAX_FILES_WALKED
    max_file_bytes: int = MAX_FILE_BYTES


DEFAULT_LIMITS = Limits()


@dataclass(slots=True)
class Walked:
    """What one walk went through: directories (to notice a new file in them), and
    whether a budget ran out before the walk was done."""

    dirs: list[str]
    truncated: bool = False
    # Where the budget ran out: the directories left unread, and files read only in part.
    unwalked: list[str] = field(default_factory=list)


def collect(
    policy: Policy, root: str | None, limits: Limits = Limits(), walked: Walked | None = None
) -> dict[str, Source]:
    """Units of every file the policy denies reading, from a bounded walk."""
    walked = walked if walked is not None else Walked([])
    units: dict[str, Source] = {}
    for path in _candidates(policy, root, limits.max_files, walked):
        decision = policy.decide(Action(verb=Verb.READ, tool="Read", target=path), root)
        if decision.rule is None or decision.effect not in (Effect.DENY, Effect.ASK):
            continue
        try:
            with open(path, "rb") as f:
                data = f.read(limits.max_file_bytes)
                rest = f.read(1)
        except OSError:
            continue
        text = data.decode("utf-8", "replace")
        if rest:
            walked.truncated = True
            _unwalked(walked, [path])
            logger.warning(
                "denied file larger than screen.max_file_bytes: only its first {}"
                " bytes are indexed",
                limits.max_file_bytes,
            )
        source = Source(path, decision.rule)
        values = list(units_of(text))
        for unit in values:
            units.setdefault(unit, source)
        # A file read whole is named by its digests too; one without a value is not (the
        # empty file's sha256 is in every unsigned AWS request, and says nothing).
        if values and not rest:
            for unit in digests(data):
                units.setdefault(unit, source)
    return units


# `sha256sum .env` and the like: not the values, but they tell whoever has a guess which
# file (and which version of it) the machine holds, and the content is what is denied.
DIGESTS = ("md5", "sha1", "sha224", "sha256", "sha384", "sha512", "blake2b")


def digests(data: bytes) -> Iterator[str]:
    """The file's digests as `sha256sum` and the like print them (hex, both cases), and as
    `openssl dgst -binary | base64` and integrity attributes (`sha256-...`) do."""
    for name in DIGESTS:
        raw = hashlib.new(name, data).digest()
        yield raw.hex()
        yield raw.hex().upper()
        yield base64.b64encode(raw).decode().rstrip("=")


def _candidates(policy: Policy, root: str | None, max_files: int, walked: Walked) -> Iterator[str]:
    # Home- and absolute-anchored rule bases first, each with its own budget, so a large
    # project can never push ~/.ssh out of the index.
    yield from _anchored(policy, max_files, walked)
    if root:
        yield from _walk(root, [max_files], walked)
        # A `.gate/` above the root anchors its rules at its own directory: its tree too.
        above = {
            r.root
            for r in policy.rules
            if r.layer in PROJECT_LAYERS and r.root and r.effect is not Effect.ALLOW
        }
        for top in sorted(d for d in above if root.startswith(d.rstrip("/") + "/")):
            yield from _walk(top, [max_files], walked)


def _anchored(policy: Policy, max_files: int, walked: Walked) -> Iterator[str]:
    home = os.path.expanduser("~")
    for rule in policy.rules:
        spec = rule.specifier
        if rule.tool != "Read" or rule.effect is Effect.ALLOW or not spec:
            continue
        if spec.startswith("~/"):
            base = home + spec[1:]
        elif spec.startswith("//"):
            base = spec[1:]
        else:
            continue
        literal = _GLOB_CHARS.split(base, maxsplit=1)[0]
        literal = literal if literal == base else os.path.dirname(literal)
        if os.path.isfile(literal):
            yield literal
        elif os.path.isdir(literal) and literal not in ("/", home):
            yield from _walk(literal, [max_files], walked)
        elif not os.path.lexists(literal) and len(walked.dirs) < MAX_DIRS_STAMPED:
            # Not there yet: the directory it would be made in is stamped, so a ~/.ssh
            # created a moment before a request is indexed before that request leaves.
            parent = os.path.dirname(literal)
            while parent and not os.path.isdir(parent) and parent != os.path.dirname(parent):
                parent = os.path.dirname(parent)
            if parent:
                walked.dirs.append(parent)


def _walk(top: str, budget: list[int], walked: Walked) -> Iterator[str]:
    stack = deque([top])  # breadth first: the directories stamped are the shallowest
    while stack and budget[0] > 0:
        d = stack.popleft()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        if len(walked.dirs) < MAX_DIRS_STAMPED:
            walked.dirs.append(d)
        for entry in entries:
            budget[0] -= 1
            if budget[0] <= 0:
                walked.truncated = True
                _unwalked(walked, [d, *stack])
                logger.warning(
                    "denied-file walk stopped at its limit (screen.max_files)"
                    " under {}; not walked yet: {}; indexing the rest in the"
                    " background",
                    top,
                    ", ".join(walked.unwalked[:5]),
                )
                return
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIP_DIRS:
                        stack.append(entry.path)
                elif entry.is_file() and entry.stat().st_size > 0:
                    yield entry.path
            except OSError:
                continue


MAX_UNWALKED = 50  # directories named as not walked (gate rules, the log, placeholders)


def _unwalked(walked: Walked, paths: list[str]) -> None:
    for path in paths:
        if len(walked.unwalked) >= MAX_UNWALKED:
            return
        if path not in walked.unwalked:
            walked.unwalked.append(path)
