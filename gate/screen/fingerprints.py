"""Content of denied files, found wherever it appears in an outbound string.

Agent-side rules leak through `python -c "open('.env')"`, `grep -r`, `@file` mentions and a
model echoing a value back. So gate reads the files deny rules cover, extracts their
sensitive units (values of `KEY=VALUE` lines, credential fields, key-file lines), and finds
them, and their base64, hex, URL- and JSON-escaped forms, in every string with one
Aho-Corasick pass. Units live in memory only; nothing here is written to disk.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import threading
import time
from collections import Counter
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from urllib.parse import quote

import ahocorasick_rs
from loguru import logger

from gate.agents.actions import Action, Verb
from gate.rules.engine import Policy
from gate.rules.model import Effect, Rule
from gate.screen.secrets import content_key

MAX_FILES_WALKED = 20_000     # default: directory entries looked at per walk
MAX_FILE_BYTES = 256 << 10    # default: a larger denied file contributes its first part
MAX_UNITS = 50_000            # units remembered per project (values rotated away included)
MIN_UNIT = 8
REFRESH_SECONDS = 5.0
CLEAN_ENTRIES = 16384         # strings remembered as holding no denied value, per index
_SKIP_DIRS = frozenset({".git", "node_modules", ".venv", "venv", "__pycache__", ".tox",
                        ".mypy_cache", ".ruff_cache", ".pytest_cache", "dist", "build",
                        "target", ".next", ".cache", ".gradle", ".idea"})
_ASSIGN = re.compile(r"""^\s*(?:export\s+)?["']?[\w.-]+["']?\s*[=:]\s*(.+?)\s*,?\s*$""")
_GLOB_CHARS = re.compile(r"[*?\[{]")


@dataclass(frozen=True, slots=True)
class Source:
    path: str
    rule: Rule

    def placeholder(self) -> str:
        name = os.path.basename(self.path)
        return f"[gate: withheld a value from {name} (rule {self.rule.text}, {self.rule.where})]"


@dataclass(frozen=True, slots=True)
class Limits:
    """How much the denied-file walk may read (config.yaml `screen:`)."""

    max_files: int = MAX_FILES_WALKED
    max_file_bytes: int = MAX_FILE_BYTES


@dataclass(frozen=True, slots=True)
class Hit:
    start: int
    end: int
    source: Source


class DeniedIndex:
    """A matcher over every unit of every denied file (and its encoded forms)."""

    def __init__(self, units: dict[str, Source]):
        self.units = units
        forms: dict[str, Source] = {}
        for unit, source in units.items():
            for form in encoded_forms(unit):
                forms.setdefault(form, source)
        self._forms = list(forms)
        self._sources = [forms[f] for f in self._forms]
        # Strings seen to hold nothing of this index (keyed by content, never the text):
        # agents resend the same history every turn. The units never change for an index,
        # so an entry cannot go stale; a new unit means a new index, with an empty memory.
        self._clean: dict[Hashable, None] = {}
        self._ac = ahocorasick_rs.AhoCorasick(
            self._forms, matchkind=ahocorasick_rs.MatchKind.LeftmostLongest) if forms else None

    def __len__(self) -> int:
        return len(self.units)

    def find(self, text: str) -> list[Hit]:
        if self._ac is None or len(text) < MIN_UNIT:
            return []
        return [Hit(s, e, self._sources[i]) for i, s, e in self._ac.find_matches_as_indexes(text)]

    def redact(self, text: str) -> tuple[str, list[Hit]]:
        if self._ac is None or len(text) < MIN_UNIT:
            return text, []
        key = content_key(text)
        if key in self._clean:
            return text, []
        hits = self.find(text)
        if not hits and len(text) > 120 and _WRAPPED_LINE.search(text) is not None:
            hits = self._wrapped(text)
        if not hits:
            if len(self._clean) >= CLEAN_ENTRIES:
                self._clean.clear()
            self._clean[key] = None
            return text, hits
        out, last = [], 0
        for hit in hits:
            out += [text[last:hit.start], hit.source.placeholder()]
            last = hit.end
        out.append(text[last:])
        return "".join(out), hits

    def _wrapped(self, text: str) -> list[Hit]:
        """`base64 .env` wraps at 76 columns and `xxd -p` at 60, which splits a value's
        encoded form across lines: a multi-line base64 or hex block that holds one once its
        line breaks are removed is withheld whole."""
        out = []
        for m in _WRAPPED_BLOCK.finditer(text):
            compact = re.sub(r"\s+", "", m.group(0))
            if hits := self.find(compact):
                out.append(Hit(m.start(), m.end(), hits[0].source))
        return out


# Two or more lines of base64 or hex, as `base64`, `openssl base64` and `xxd -p` print them.
# Anchored at line starts so a scan stays linear; the cheap line test runs first.
_WRAPPED_LINE = re.compile(r"^[A-Za-z0-9+/]{56,}={0,2}\r?\n[A-Za-z0-9+/]", re.M)
_WRAPPED_BLOCK = re.compile(r"^(?:[A-Za-z0-9+/]{20,}={0,2}\r?\n)+[A-Za-z0-9+/]+={0,2}$", re.M)


def encoded_forms(unit: str) -> Iterator[str]:
    """The unit as written and as the usual encodings would carry it."""
    yield unit
    raw = unit.encode()
    for form in (json.dumps(unit)[1:-1], quote(unit, safe=""), raw.hex(), raw.hex().upper()):
        if form != unit:
            yield form
    # base64 of text holding the unit at any offset: three alignments, without the edge
    # characters that depend on the neighbouring bytes.
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw).decode()
        start = (4 * k + 2) // 3 + (1 if k else 0)
        body = enc[start:len(enc) - 4]
        if len(body) >= 12:
            yield body


def units_of(text: str) -> Iterator[str]:
    """The sensitive units of a denied file's text."""
    in_pem = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("-----BEGIN"):
            in_pem = True
            continue
        if stripped.startswith("-----END"):
            in_pem = False
            continue
        if in_pem:
            if len(stripped) >= 16 and ":" not in stripped:
                yield stripped
            continue
        if not stripped or stripped.startswith(("#", "//", ";", "[")):
            continue
        stripped = stripped.removeprefix("- ")  # a YAML list item
        m = _ASSIGN.match(stripped)
        value = _dotenv_value(m.group(1)) if m else stripped
        if is_sensitive(value):
            yield value
        # The password inside a credential URL also travels on its own.
        if (url := _URL_PASSWORD.search(value)) and is_sensitive(url.group(1)):
            yield url.group(1)


_URL_PASSWORD = re.compile(r"://[^/:@\s]+:([^@/\s]+)@")


def _dotenv_value(raw: str) -> str:
    """A value as dotenv reads it: inside its quotes, or up to a ` #` comment."""
    raw = raw.strip()
    if raw[:1] in ("'", '"') and (end := raw.find(raw[0], 1)) > 0:
        return raw[1:end]
    return raw.split(" #", 1)[0].strip()


def is_sensitive(value: str) -> bool:
    """Long, varied strings; not words like `production`, numbers, or booleans."""
    if len(value) < MIN_UNIT or value.lower() in ("true", "false", "null", "none"):
        return False
    if value.isalpha() and (value.islower() or value.isupper()):
        return False
    if value.isdigit():
        return False
    counts = Counter(value)
    entropy = -sum(c / len(value) * math.log2(c / len(value)) for c in counts.values())
    return entropy >= 2.5


class IndexStore:
    """Denied-file indexes per project root, refreshed every few seconds; units never leave
    memory, and a value rotated out of a file is still recognised for the gate's lifetime."""

    def __init__(self, limits: Limits = Limits()) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._by_root: dict[str | None, tuple[float, int, DeniedIndex, tuple[object, ...]]] = {}
        self._refreshing: set[str | None] = set()

    def index_for(self, policy: Policy, root: str | None) -> DeniedIndex:
        """The index for a root. The first one is built before the request goes on (no
        request is screened without it), and so is one whose known denied files or project
        directory changed (a value written just now must not leave once); other refreshes
        run in the background, so the walk rarely sits on a request's path."""
        with self._lock:
            hit = self._by_root.get(root)
        if hit and hit[1] == id(policy) and _stamp(hit[2], root) != hit[3]:
            return self.refresh(policy, root)
        with self._lock:
            if hit and hit[1] == id(policy):
                if time.monotonic() - hit[0] >= REFRESH_SECONDS and root not in self._refreshing:
                    self._refreshing.add(root)
                    threading.Thread(target=self._background, args=(policy, root),
                                     daemon=True, name="gate-index").start()
                return hit[2]
        return self.refresh(policy, root)

    def known(self) -> list[DeniedIndex]:
        """Every index built so far (what gate writes down is checked against them all)."""
        with self._lock:
            return [hit[2] for hit in self._by_root.values()]

    def _background(self, policy: Policy, root: str | None) -> None:
        try:
            self.refresh(policy, root)
        except Exception as exc:  # the previous index stays in use
            logger.warning("denied-file index refresh failed: {}", type(exc).__name__)
        finally:
            with self._lock:
                self._refreshing.discard(root)

    def refresh(self, policy: Policy, root: str | None) -> DeniedIndex:
        now = time.monotonic()
        with self._lock:
            hit = self._by_root.get(root)
        units = dict(hit[2].units) if hit else {}
        fresh = collect(policy, root, self.limits)
        changed = any(u not in units for u in fresh)
        for unit, source in fresh.items():  # a unit keeps its first source: stable placeholders
            units.setdefault(unit, source)
        if len(units) > MAX_UNITS:
            units = dict(list(units.items())[-MAX_UNITS:])
        index = DeniedIndex(units) if changed or not hit else hit[2]
        with self._lock:
            self._by_root[root] = (now, id(policy), index, _stamp(index, root))
        if changed:
            logger.info("denied-file index: {} units from {} files", len(units),
                        len({s.path for s in units.values()}))
        return index


def _stamp(index: DeniedIndex, root: str | None) -> tuple[object, ...]:
    """A few stats: the known denied files and the project directory (a new file there)."""
    paths = sorted({s.path for s in index.units.values()})
    if root:
        paths.append(root)
    out: list[object] = []
    for path in paths:
        try:
            out.append(os.stat(path).st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)


def collect(policy: Policy, root: str | None, limits: Limits = Limits()) -> dict[str, Source]:
    """Units of every file the policy denies reading, from a bounded walk."""
    units: dict[str, Source] = {}
    for path in _candidates(policy, root, limits.max_files):
        decision = policy.decide(Action(Verb.READ, "Read", path), root)
        if decision.rule is None or decision.effect not in (Effect.DENY, Effect.ASK):
            continue
        try:
            with open(path, "rb") as f:
                text = f.read(limits.max_file_bytes).decode("utf-8", "replace")
        except OSError:
            continue
        for unit in units_of(text):
            units.setdefault(unit, Source(path, decision.rule))
    return units


def _candidates(policy: Policy, root: str | None, max_files: int) -> Iterator[str]:
    # Home- and absolute-anchored rule bases first, each with its own budget, so a large
    # project can never push ~/.ssh out of the index.
    yield from _anchored(policy, max_files)
    if root:
        yield from _walk(root, [max_files])


def _anchored(policy: Policy, max_files: int) -> Iterator[str]:
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
            yield from _walk(literal, [max_files])


def _walk(top: str, budget: list[int]) -> Iterator[str]:
    stack = [top]
    while stack and budget[0] > 0:
        d = stack.pop()
        try:
            entries = list(os.scandir(d))
        except OSError:
            continue
        for entry in entries:
            budget[0] -= 1
            if budget[0] <= 0:
                logger.warning("denied-file walk stopped at its limit (screen.max_files)"
                               " under {}", top)
                return
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in _SKIP_DIRS:
                        stack.append(entry.path)
                elif entry.is_file() and entry.stat().st_size > 0:
                    yield entry.path
            except OSError:
                continue
