"""Content of denied files, found wherever it appears in an outbound string.

Agent-side rules leak through `python -c "open('.env')"`, `grep -r`, `@file` mentions and a
model echoing a value back. So gate reads the files deny rules cover, extracts their
sensitive units (values of `KEY=VALUE` lines, credential fields, key-file lines), and finds
them, and their base64, hex, URL- and JSON-escaped forms, in every string with one
Aho-Corasick pass over its letters and digits (gate/screen/skeleton.py: a random-looking
value is found there in any case, through separators, and by its pieces). Units live in
memory only; nothing here is written to disk.
"""

from __future__ import annotations

import ast
import base64
import contextlib
import html
import json
import os
import re
import threading
import time
from collections.abc import Hashable, Iterable, Iterator
from dataclasses import dataclass
from urllib.parse import quote

from loguru import logger

from gate.rules.engine import Policy
from gate.rules.held import identity
from gate.rules.layers import PolicyStore
from gate.screen import blobs, dumps, escaped, lookalike, numerals, unpack
from gate.screen.byte_forms import MIN_BYTES
from gate.screen.denied_walk import (
    DEFAULT_LIMITS,
    UNSCREENED,
    Limits,
    Source,
    Walked,
    collect,
)
from gate.screen.git_history import history_units
from gate.screen.hidden import as_text
from gate.screen.secrets import content_key
from gate.screen.skeleton import Matcher
from gate.screen.turned import TURNS
from gate.screen.units import MIN_UNIT, is_word, units_of

__all__ = ["MIN_UNIT", "DeniedIndex", "IndexStore", "Limits", "Source", "collect", "units_of"]

# Projects remembered from requests, the least recent forgotten first: each is screened for
# in every request that states no directory, at a few stats per project.
MAX_PROJECTS = 16
MAX_UNITS = 50_000  # units remembered per project (values rotated away included)
REFRESH_SECONDS = 5.0
# A walk that ran out of budget goes on in the background with this many times as much.
BACKGROUND_FACTOR = 50
DEEPER_SECONDS = 60.0
KNOWN_ENTRIES = 16384  # strings whose denied values are remembered, per index
DECODED_LAYERS = 2  # an encoded run inside a decoded one, no deeper


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
        written: set[str] = set()  # the units as written, in either case
        for unit, source in units.items():
            # Upper- and lower-cased too (`tr a-z A-Z`, `.upper()`, `awk toupper`): a hex
            # value or a password in one case is the value to anyone who reads it.
            cased = (unit, unit.upper(), unit.lower())
            written.update(cased)
            for form in (*encoded_forms(unit), *cased[1:]):
                forms.setdefault(form, source)
        self._forms = list(forms)
        self._sources = [forms[f] for f in self._forms] + list(units.values())
        # What strings seen before hold of this index (keyed by content, never the text):
        # agents resend the same history every turn. The units never change for an index,
        # so an entry cannot go stale; a new unit means a new index, with an empty memory.
        self._known: dict[Hashable, tuple[Hit, ...]] = {}
        # One pass finds every form as written (a word-like one as a whole word only) and
        # the random-looking units through separators, case changes and cuts.
        self._matcher = Matcher(
            [(f, is_word(f) and f in written, i) for i, f in enumerate(self._forms)],
            [(u, len(self._forms) + j) for j, u in enumerate(units)],
        )

    def could_hold(self, raw: bytes) -> bool:
        """Whether a value could be found by its letters and digits in what `raw` decodes
        to (a test on bytes before they are parsed; yes is always safe)."""
        return self._matcher.could_hold(raw)

    def __len__(self) -> int:
        return len(self.units)

    def find(self, text: str, whole_words: bool = True) -> list[Hit]:
        """Where the units are in `text`; a word-like unit only as a whole word unless
        `whole_words` is False (a value cut in two and joined back, say)."""
        if not self._forms or len(text) < MIN_UNIT:
            return []
        found = self._matches(text, whole_words)
        # Lookalike characters (fullwidth, a Cyrillic twin, an invisible one between
        # letters) are read back as the ASCII they stand for, and hits mapped back: in
        # text as sent, not in what an encoded run decodes to (bytes that are not text
        # decode to every script at once, and nobody writes lookalikes to then encode them).
        if (view := lookalike.folded(text)) is not None:
            found += [
                Hit(*lookalike.origin(text, h.start, h.end), h.source)
                for h in self._matches(view, whole_words)
            ]
        # Escapes decoded (`quote(open(".env").read())` writes `PASS%3Dhunter2%0A`: the
        # value glued to `3D` is no whole word), hits mapped back onto the escapes.
        if (esc := escaped.view(text)) is not None:
            found += [
                Hit(*esc.origin(h.start, h.end), h.source)
                for h in self._matches(esc.view, whole_words)
            ]
        return found

    def _matches(self, text: str, whole_words: bool) -> list[Hit]:
        """Where the forms are in `text` as it is."""
        return [Hit(s, e, self._sources[o]) for s, e, o in self._matcher.find(text, whole_words)]

    def redact(self, text: str) -> tuple[str, list[Hit]]:
        """`text` with every hit replaced by its source's placeholder, and the hits."""
        if not self._forms or len(text) < MIN_UNIT:
            return text, []
        key = content_key(text)
        known = self._known.get(key)
        if known is None:
            known = self._remember(key, self.hits(text))
        return _replaced(text, known), list(known)

    def remember(self, text: str, hits: Iterable[Hit]) -> str:
        """File `hits` as what `text` holds (a screening worker found them with an index of
        the same units), so `redact(text)` finds them worked out; `text` redacted."""
        if not self._forms or len(text) < MIN_UNIT:
            return text
        return _replaced(text, self._remember(content_key(text), hits))

    def _remember(self, key: Hashable, hits: Iterable[Hit]) -> tuple[Hit, ...]:
        if len(self._known) >= KNOWN_ENTRIES:
            self._known.clear()
        kept = self._known[key] = tuple(hits)
        return kept

    def hits(self, text: str) -> list[Hit]:
        """Every place `text` holds a unit: as `find` sees them, in wrapped blocks, and in
        encoded runs that decode to a unit (compressed ones inflated); sorted, and merged
        where they overlap (the wider span withheld)."""
        if not self._forms or len(text) < MIN_UNIT:
            return []
        found = self.find(text)
        if found and len(text) >= dumps.MIN_VIEW:
            found += self._dumps_holding(text, found)
        found += self._printed_bytes(text)
        if len(text) >= numerals.MIN_BITS:
            found += self._numerals(text)
        if _wrapped_line(text):
            found += self._wrapped(text)
        if len(text) >= blobs.MIN_RUN:
            found += self._decoded(text, unpack.Budget(), 0)
        if len(text) >= dumps.MIN_VIEW:
            found += self._dumped(text)
        return _merged(found)

    def _printed_bytes(self, text: str) -> list[Hit]:
        """Bytes printed as characters: Python's repr of them (`print(base64.b64decode(v))`
        gives `b'0\\x82\\x04...'`, printable bytes as themselves) and bytes read as
        Latin-1 or with surrogateescape (a character per byte). What they spell is matched
        as hex against the forms of the bytes a denied base64 value decodes to
        (gate/screen/byte_forms.py); the whole literal or run is withheld."""
        out = []
        if "\\x" in text:
            # Literals one after another are one (`pprint`, black: `(b'...'\n b'...')`),
            # and a bytes literal folded over lines (`| fold -w 80`) is one once they
            # are joined again.
            folded = _FOLDED_LITERAL.finditer(text) if "b'" in text or 'b"' in text else ()
            for m in (*_ESCAPED_LITERALS.finditer(text), *(f for f in folded if "\n" in f[0])):
                try:
                    value = ast.literal_eval(m.group(0).replace("\r", "").replace("\n", ""))
                    data = value if isinstance(value, bytes) else value.encode("latin-1")
                except (ValueError, SyntaxError, UnicodeEncodeError):
                    continue
                if len(data) >= MIN_BYTES and (inner := self._matches(data.hex(), True)):
                    out.append(Hit(m.start(), m.end(), inner[0].source))
        if not text.isascii() and _HIGH_BYTE.search(text):
            for m in _BYTE_CHARS.finditer(text):
                run = m.group(0)
                high = len(run) - len(run.encode("ascii", "ignore"))
                if high < 4 or high * 8 < len(run):
                    continue  # prose with accented letters: bytes of a key are half high
                data = run.encode("latin-1", "surrogateescape")  # U+DC80-U+DCFF: 0x80-0xFF
                if inner := self._matches(data.hex(), True):
                    out.append(Hit(m.start(), m.end(), inner[0].source))
            if _ESCAPED_BYTE.search(text):  # bytes read as UTF-8 with surrogateescape
                data = text.encode("utf-8", "surrogateescape")
                if inner := self._matches(data.hex(), True):
                    out.append(Hit(0, len(text), inner[0].source))  # all of it: garbled
        return out

    def _numerals(self, text: str) -> list[Hit]:
        """Runs of digits that spell bytes in a way no form is found in (word dumps, bits,
        big integers: gate/screen/numerals.py) whose bytes, in any reading of them, hold a
        unit's bytes: the whole run is withheld."""
        out = []
        for start, end, readings in numerals.readings(text):
            for data in readings:
                if inner := self._matches(data.hex(), True):
                    out.append(Hit(start, end, inner[0].source))
                    break
        return out

    def _dumps_holding(self, text: str, found: list[Hit]) -> list[Hit]:
        """A dump (`xxd`, `od`, `hexdump -C`) that a unit's form was found in is withheld
        whole: its layout (offsets, a text column) cuts a value's bytes into lines, and
        only the lines that hold a form's middle are found as they are."""
        out = []
        for start, end, _ in dumps.around(text, [h.start for h in found]):
            if inside := next((h for h in found if start <= h.start < end), None):
                out.append(Hit(start, end, inside.source))
        return out

    def _dumped(self, text: str) -> list[Hit]:
        """Bytes printed one by one (`xxd`, `od`, `hexdump`, characters spelled out:
        gate/screen/dumps.py) that spell a unit: the whole run is withheld. A dump of
        compressed data is inflated; past the bound it is withheld unread."""
        out = []
        budget = unpack.Budget()
        for start, end, data in dumps.spans(text):
            if (at := unpack.magic_at(data[:48])) != -1:
                try:
                    data = unpack.inflate(data[at:], budget)
                except Exception:  # past the bound, or a stream no inflater reads
                    out.append(Hit(start, end, UNSCREENED))  # withheld unread
                    continue
            spelled = as_text(data)
            if spelled is None:
                # Bytes that are no text (a key's, decoded from a denied file's base64):
                # their hex holds that value's bytes if they are its (gate/screen/byte_forms.py).
                if inner := self._matches(data.hex(), True):
                    out.append(Hit(start, end, inner[0].source))
                continue
            inner = self._matches(spelled, True)
            if not inner and _wrapped_line(spelled):
                inner = self._wrapped(spelled)
            if not inner and len(spelled) >= blobs.MIN_RUN:  # base64 spelled out
                inner = self._decoded(spelled, budget, 1)
            if inner:
                out.append(Hit(start, end, inner[0].source))
        return out

    def _decoded(self, text: str, budget: unpack.Budget, depth: int) -> list[Hit]:
        """Runs whose decoded text holds a unit, whole; one that inflates past the bound
        is withheld unread (fail closed: what could not be read cannot be let out)."""
        out = []
        for blob in blobs.blobs(text, budget):
            if blob.text is None:
                out.append(Hit(blob.start, blob.end, UNSCREENED))
                continue
            inner = self._matches(blob.text, True)
            if not inner and _wrapped_line(blob.text):
                inner = self._wrapped(blob.text)
            if not inner and depth + 1 < DECODED_LAYERS:  # base64 of gzip of base64 ...
                inner = self._decoded(blob.text, budget, depth + 1)
            if inner:
                out.append(Hit(blob.start, blob.end, inner[0].source))
        return out

    def _wrapped(self, text: str) -> list[Hit]:
        """`base64 .env` wraps at 76 columns and `xxd -p` at 60, which splits a value's
        encoded form across lines: a multi-line base64 or hex block that holds one once its
        line breaks are removed is withheld whole."""
        out = []
        for m in _WRAPPED_BLOCK.finditer(text):
            lines = m.group(0).split()
            # Each line reversed too (`base64 .env | rev`, `xxd -p .env | rev`), in a block
            # the size of a file of values, not of an image.
            compacts = ["".join(lines)]
            if len(compacts[0]) <= _REVERSED_MAX:
                compacts.append("".join(line[::-1] for line in lines))
            for compact in compacts:
                if hits := self._matches(compact, True):
                    out.append(Hit(m.start(), m.end(), hits[0].source))
                    break
        return out


# A quoted literal with an escaped byte (`b'...\\x82...'`, or a str's repr), one line,
# with the literals of its kind after it that it is joined to (white space between).
_BODY = r"""(?:'(?:[^'\\\n]|\\.){Q}'|"(?:[^"\\\n]|\\.){Q}")"""
_FIRST, _NEXT = _BODY.replace("{Q}", "{8,}"), _BODY.replace("{Q}", "*")
_ESCAPED_LITERALS = re.compile(
    rf"""(?<![\w'"])(?:b{_FIRST}(?:\s*b{_NEXT})*|{_FIRST}(?:\s*{_NEXT})*)"""
)
# A bytes literal that may hold line breaks, put anywhere by `fold`: inside an escape too,
# between its backslash and the character it escapes (`\\` + break + `'` is no end of
# the literal). A repr writes its own line breaks as `\n`, so every break is a fold's.
# One that holds none is read above.
_FOLDED_LITERAL = re.compile(
    r"""(?<![\w'"])b(?:'(?:[^'\\]|\\\r?\n?[\s\S]){8,200000}'|"(?:[^"\\]|\\\r?\n?[\s\S]){8,200000}")"""
)
# A character per byte: Latin-1, and a lone surrogate escaping a byte that was no UTF-8.
_BYTE_CHARS = re.compile(f"[\x00-\xff\udc80-\udcff]{{{MIN_BYTES},}}")
_HIGH_BYTE = re.compile("[\x80-\xff\udc80-\udcff]")
_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def _merged(hits: list[Hit]) -> list[Hit]:
    out: list[Hit] = []
    for hit in sorted(hits, key=lambda h: (h.start, -h.end)):
        if out and hit.start < out[-1].end:
            if hit.end > out[-1].end:
                out[-1] = Hit(out[-1].start, hit.end, out[-1].source)
            continue
        out.append(hit)
    return out


_REVERSED_MAX = 64 << 10  # characters of a wrapped block also read with its lines reversed
_B64_ALPHABET = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")
# Two or more lines of base64 or hex, as `base64`, `openssl base64` and `xxd -p` print them.
# Anchored at line starts so a scan stays linear; the cheap line test runs first.
_WRAPPED_MIN = 57  # the shortest text _WRAPPED_LINE can match
# The next line may start with padding: the last line of `base64 .env | rev`.
_WRAPPED_LINE = re.compile(r"^[A-Za-z0-9+/]{56,}={0,2}\r?\n={0,2}[A-Za-z0-9+/]", re.M)
# The same test at C speed: base64's characters as "a", line ends kept, the rest ".".
_B64_SHAPE = bytes(
    ord("a") if chr(c) in _B64_ALPHABET else c if c in b"\r\n=" else ord(".") for c in range(256)
)
_LINE_RUN = b"\n" + b"a" * 56  # at a line start
_LINE_TAIL = re.compile(rb"a*={0,2}\r?\n={0,2}a")


def _replaced(text: str, hits: tuple[Hit, ...]) -> str:
    """`text` with each hit replaced by its source's placeholder."""
    if not hits:
        return text
    out, last = [], 0
    for hit in hits:
        out += [text[last : hit.start], hit.source.placeholder()]
        last = hit.end
    out.append(text[last:])
    return "".join(out)


def _wrapped_line(text: str) -> bool:
    """Whether `text` holds a line _WRAPPED_LINE matches (a regex tried at every line
    start costs a quarter of the screen of ordinary text; bytes searches do not)."""
    if len(text) <= _WRAPPED_MIN:
        return False
    shape = b"\n" + text.encode("utf-8", "surrogatepass").translate(_B64_SHAPE)
    at = shape.find(_LINE_RUN)
    while at != -1:
        if _LINE_TAIL.match(shape, at + len(_LINE_RUN)):
            return True
        at = shape.find(_LINE_RUN, at + len(_LINE_RUN))
    return False


# (A line may start with padding: it is reversed.)
_WRAPPED_BLOCK = re.compile(
    r"^(?:={0,2}[A-Za-z0-9+/]{20,}={0,2}\r?\n)+={0,2}[A-Za-z0-9+/]+={0,2}$", re.M
)


def encoded_forms(unit: str) -> Iterator[str]:
    """The unit as written and as the usual encodings would carry it."""
    yield unit
    raw = unit.encode()
    # Reversed and rot13-ed too (`rev .env`, `[::-1]`, `tr A-Za-z N-ZA-Mn-za-m`): long
    # enough not to be a word read backwards or rotated.
    turned = tuple(t.apply(unit) for t in TURNS) if len(unit) >= 10 else ()
    # UTF-16 (`iconv -t utf-16`, PowerShell, Windows tools), as hex or base64: the text's
    # own bytes, a zero beside each ASCII character.
    wide = unit.encode("utf-16-le")
    for form in (
        json.dumps(unit)[1:-1],
        json.dumps(json.dumps(unit))[3:-3],  # JSON inside a JSON string
        quote(unit, safe=""),
        html.escape(unit),
        _shell_quoted(unit),
        raw.hex(),
        raw.hex().upper(),
        wide.hex(),
        wide.hex().upper(),
        *turned,
    ):
        if form != unit:
            yield form
    # base64 of text holding the unit at any offset: three alignments, without the edge
    # characters that depend on the neighbouring bytes.
    for data in (raw, wide):
        for k in range(3):
            enc = base64.b64encode(b"\0" * k + data).decode()
            start = (4 * k + 2) // 3 + (1 if k else 0)
            body = enc[start : len(enc) - 4]
            if len(body) >= 8:  # 48 bits: a short passphrase still has a base64 form
                yield body
                url = body.replace("+", "-").replace("/", "_")  # base64url, as URLs carry it
                if url != body:
                    yield url


# What bash's `printf %q` puts a backslash before (and `~` at the start).
_SHELL_SPECIAL = frozenset(" \t!\"#$&'()*;<>?[\\]^`{|}")


def _shell_quoted(unit: str) -> str:
    """The unit as `printf %q` writes it: a backslash before each character the shell
    reads specially."""
    quoted = "".join("\\" + c if c in _SHELL_SPECIAL else c for c in unit)
    return "\\" + quoted if quoted.startswith("~") else quoted


@dataclass(frozen=True, slots=True, kw_only=True)
class _Entry:
    at: float  # when it was built (monotonic)
    # The policy it was built for (held, not its id(): a policy rebuilt after a person
    # confirmed loosening the rules could reuse a freed one's id and find a stale index)
    policy: Policy
    index: DeniedIndex
    stamp: tuple[object, ...]
    dirs: tuple[str, ...]  # directories the walk went through
    truncated: bool  # a budget ran out: a background walk with more goes on
    unwalked: tuple[str, ...] = ()  # then: the directories (and files) it did not read
    rules: frozenset[tuple[object, ...]] = frozenset()  # the rules in force, as identity()


class WalkNeeded(Exception):
    """A denied-file index must be built or rebuilt, and this thread may not walk (the
    event loop screening a small body, see IndexStore.no_walks): screen it on a thread."""


class IndexStore:
    """Denied-file indexes per project root, refreshed every few seconds; units never leave
    memory, and a value rotated out of a file is still recognised for the gate's lifetime.

    It also knows the projects this gate was told about (`gate serve --project`,
    `projects:` in config.yaml, the repository `gate serve` started in) and the ones it
    has seen requests from: a request that does not say where it comes from is screened
    against all of them (see `unrooted`)."""

    def __init__(self, limits: Limits = DEFAULT_LIMITS, projects: tuple[str, ...] = ()) -> None:
        self.limits = limits
        self._lock = threading.Lock()
        self._by_root: dict[str | None, _Entry] = {}
        self._refreshing: set[str | None] = set()
        self._told = tuple(dict.fromkeys(os.path.abspath(p) for p in projects))
        self._seen: dict[str, None] = {}  # the most recent last
        self._deeper: dict[str | None, float] = {}  # when a walk with more budget last began
        self._whole: set[str | None] = set()  # roots such a walk saw whole
        self._git: dict[str, tuple[tuple[object, Policy], dict[str, Source]]] = {}
        self._merged: tuple[tuple[int, ...], DeniedIndex] | None = None
        self._no_walks = threading.local()

    @contextlib.contextmanager
    def no_walks(self) -> Iterator[None]:
        """While held, this thread may not walk a project or read its git history: an index
        that must be built first raises WalkNeeded instead, before anything is screened
        with it. Any index a stated working directory names is covered, not only the ones
        a caller could name beforehand."""
        before = getattr(self._no_walks, "on", False)
        self._no_walks.on = True
        try:
            yield
        finally:
            self._no_walks.on = before

    @property
    def projects(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(dict.fromkeys((*self._told, *self._seen)))

    def roots(self) -> tuple[str, ...]:
        """Every project root this gate knows: told, seen, and indexed before (a project
        pushed out of the recent list by others still counts)."""
        with self._lock:
            indexed = [r for r in self._by_root if r is not None]
            return tuple(dict.fromkeys((*self._told, *self._seen, *sorted(indexed))))

    def seen(self, root: str) -> None:
        """A project a request came from: later requests without a working directory are
        screened against its denied files too."""
        with self._lock:
            self._seen.pop(root, None)
            self._seen[root] = None
            if len(self._seen) > MAX_PROJECTS:
                self._seen.pop(next(iter(self._seen)))

    def incomplete(self) -> tuple[str | None, ...]:
        """Roots whose last walk ran out of budget (their unwalked part is still being
        indexed in the background)."""
        with self._lock:
            return tuple(r for r, e in self._by_root.items() if e.truncated)

    def unwalked(self, root: str | None) -> tuple[str, ...]:
        """What the last walk for a root did not read because its budget ran out (empty
        once a walk saw the whole project)."""
        with self._lock:
            hit = self._by_root.get(root)
        return hit.unwalked if hit and hit.truncated else ()

    def unrooted(self, policies: PolicyStore) -> DeniedIndex | None:
        """The index for a request with no working directory: every known project's denied
        values and the home- and absolute-anchored ones, and the last values of projects
        seen before the most recent ones. None when no project is known."""
        projects = self.projects
        if not projects:
            return None
        parts = [self.index_for(policies.policy_for(None), None)]
        # In a fixed order: the merged index is rebuilt only when one of its parts is new.
        parts += [self.index_for(policies.policy_for(p), p) for p in sorted(projects)]
        with self._lock:
            # Projects forgotten from the recent list keep their last index: stating one
            # directory after another must not push a real project out of what is screened.
            parts += [
                e.index
                for r, e in sorted(self._by_root.items(), key=lambda i: str(i[0]))
                if r is not None and r not in projects
            ]
        key = tuple(id(p) for p in parts)
        with self._lock:
            if self._merged and self._merged[0] == key:
                return self._merged[1]
        units: dict[str, Source] = {}
        for part in parts:
            for unit, source in part.units.items():
                units.setdefault(unit, source)
        merged = DeniedIndex(units)
        with self._lock:
            self._merged = (key, merged)
        return merged

    def index_for(self, policy: Policy, root: str | None) -> DeniedIndex:
        """The index for a root. The first one is built before the request goes on (no
        request is screened without it), and so is one whose known denied files or walked
        directories changed (a value written just now must not leave once); other refreshes
        run in the background, so the walk rarely sits on a request's path."""
        with self._lock:
            hit = self._by_root.get(root)
        if hit and hit.policy is policy and _stamp(hit.index, root, hit.dirs) != hit.stamp:
            return self.refresh(policy, root)
        with self._lock:
            if hit and hit.policy is policy:
                if time.monotonic() - hit.at >= REFRESH_SECONDS and root not in self._refreshing:
                    self._refreshing.add(root)
                    threading.Thread(
                        target=self._background, args=(policy, root), daemon=True, name="gate-index"
                    ).start()
                return hit.index
        return self.refresh(policy, root)

    def known(self) -> list[DeniedIndex]:
        """Every index built so far (what gate writes down is checked against them all)."""
        with self._lock:
            return [hit.index for hit in self._by_root.values()]

    def _background(self, policy: Policy, root: str | None, limits: Limits | None = None) -> None:
        try:
            self.refresh(policy, root, limits)
        except Exception as exc:  # the previous index stays in use
            logger.warning("denied-file index refresh failed: {}", type(exc).__name__)
        finally:
            with self._lock:
                self._refreshing.discard(root)

    def _history(self, policy: Policy, root: str) -> dict[str, Source]:
        """The denied files' values in git history, read again only when a ref moved."""
        refs = _refs_stamp(root)
        with self._lock:
            hit = self._git.get(root)
        if hit and hit[0][0] == refs and hit[0][1] is policy:
            return hit[1]
        units = history_units(policy, root)
        with self._lock:
            self._git[root] = ((refs, policy), units)
        return units

    def refresh(
        self, policy: Policy, root: str | None, limits: Limits | None = None
    ) -> DeniedIndex:
        if getattr(self._no_walks, "on", False):
            raise WalkNeeded(root)
        now = time.monotonic()
        with self._lock:
            hit = self._by_root.get(root)
        # A value stays recognised while the rule that denied it is in force (a value
        # rotated out of a denied file included); once a person confirmed removing the
        # rule (gate/ask/loosen.py), the file's values are no longer withheld.
        kept = frozenset(identity(r) for r in policy.rules)
        before = hit.index.units if hit else {}
        if hit and not hit.rules <= kept:  # a rule went: rare, so the scan is paid only then
            units = {u: s for u, s in before.items() if identity(s.rule) in kept}
        else:
            units = dict(before)
        walked = Walked([])
        fresh = collect(policy, root, limits or self.limits, walked)
        if root is not None:
            for unit, source in self._history(policy, root).items():
                fresh.setdefault(unit, source)
        changed = len(units) != len(before) or any(u not in units for u in fresh)
        for unit, source in fresh.items():  # a unit keeps its first source: stable placeholders
            units.setdefault(unit, source)
        if len(units) > MAX_UNITS:
            units = dict(list(units.items())[-MAX_UNITS:])
        index = DeniedIndex(units) if changed or not hit else hit.index
        dirs = tuple(walked.dirs)
        # Fail closed, and say so: a walk that ran out of budget is never taken as the
        # whole truth; a walk with more budget goes on in the background, and `gate rules`
        # and the placeholder say the index is incomplete meanwhile.
        with self._lock:
            now_hit = self._by_root.get(root)
            if now_hit is not None and now_hit is not hit:
                # Another thread refreshed this root meanwhile (requests are screened on
                # several worker threads): keep what its walk found too, or a value it
                # saw and this walk no longer does would be forgotten.
                missed = {u: s for u, s in now_hit.index.units.items() if u not in units}
                if missed:
                    units.update(missed)
                    index = DeniedIndex(units)
            if limits is not None and not walked.truncated:
                self._whole.add(root)  # the walk with more budget saw everything
            truncated = walked.truncated and root not in self._whole
            self._by_root[root] = _Entry(
                at=now,
                policy=policy,
                index=index,
                stamp=_stamp(index, root, dirs),
                dirs=dirs,
                truncated=truncated,
                unwalked=tuple(walked.unwalked),
                rules=kept,
            )
            deeper = (
                walked.truncated
                and limits is None
                and root not in self._refreshing
                and now - self._deeper.get(root, -DEEPER_SECONDS) >= DEEPER_SECONDS
            )
            if deeper:
                self._refreshing.add(root)
                self._deeper[root] = now
        if deeper:
            more = Limits(
                self.limits.max_files * BACKGROUND_FACTOR,
                self.limits.max_file_bytes * BACKGROUND_FACTOR,
            )
            threading.Thread(
                target=self._background,
                args=(policy, root, more),
                daemon=True,
                name="gate-index-more",
            ).start()
        if changed:
            logger.info(
                "denied-file index: {} units from {} files",
                len(units),
                len({s.path for s in units.values()}),
            )
        return index


def _refs_stamp(root: str) -> object:
    """Whether any ref may have moved: HEAD, packed refs and the refs directories."""
    out: list[int | None] = []
    git = os.path.join(root, ".git")
    for name in ("HEAD", "packed-refs", "refs/heads", "refs/remotes", "refs/stash"):
        try:
            out.append(os.stat(os.path.join(git, name)).st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)


def _stamp(index: DeniedIndex, root: str | None, dirs: tuple[str, ...] = ()) -> tuple[object, ...]:
    """A few stats: the known denied files, the project directory and the directories the
    last walk went through (a file created in any of them changes its directory)."""
    paths = sorted({s.path for s in index.units.values()})
    if root:
        paths.append(root)
    paths += dirs
    out: list[object] = []
    for path in paths:
        try:
            out.append(os.stat(path).st_mtime_ns)
        except OSError:
            out.append(None)
    return tuple(out)
