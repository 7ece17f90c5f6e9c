"""Secret screening of decoded strings: likely secrets found fast, named stably.

One Aho-Corasick pass finds every detector's keywords; only windows around those hits
reach the regexes, and findings are cached by content, so the history an agent resends
every turn costs a hash lookup. Text that arrives JSON-escaped inside a string (`\\n`,
`\\"`) is scanned through a same-length view with the escapes neutralised, so offsets
stay those of the original text and a PEM block with escaped newlines is still one block.
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import os
import re
import sys
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ahocorasick_rs

from gate import dirs
from gate.screen import dumps, escaped, hidden, lookalike, turned, wallets
from gate.screen.detectors import (
    UNSCREENED_ID,
    UNSCREENED_KIND,
    Detector,
    Finding,
    Tier,
    load_detectors,
    loosened,
)

__all__ = [
    "Finding",
    "Scanner",
    "Tier",
    "content_key",
    "keyed_hash",
    "load_or_create_key",
    "placeholder",
]

CACHE_ENTRIES = 8192  # distinct strings remembered (findings only, never the text)
KEY_FILE = "secret.key"
KEY_BYTES = 32
MIN_TEXT = 8
BUDGET = 2.0  # CPU seconds (this thread's, so load elsewhere does not count) per string;
# past it the string is asked about
FOLDED_MAX = 4096  # detectors with longer windows (PEM blocks) read line breaks themselves
# Each escape becomes as many characters, so view offsets are text offsets.
_PLAIN = {
    "\\\\n": "  \n",
    "\\\\": "  ",
    '\\"': ' "',
    "\\'": " '",
    "\\n": " \n",
    "\\r": " \r",
    "\\t": " \t",
}
# Escapes whose backslash is escaped once more (escaped.py reads them).
_DOUBLED_ESCAPES = ("\\\\x", "\\\\u", "\\\\0", "\\\\1", "\\\\2", "\\\\3")
# In a group, so that split() returns the escapes between the plain runs.
_ESCAPES = re.compile(r"""(\\\\n?|\\["'nrt])""")


# The hidden-form passes' triggers, found by the keyword pass: invisible characters and
# their escapes (hidden.py), what bytes printed one by one hold (dumps.py).
_TRIGGERS = tuple(dict.fromkeys((*hidden.TRIGGERS, *dumps.TRIGGERS, *escaped.TRIGGERS)))


class Scanner:
    """Finds secrets in decoded strings. Thread-safe; one per process is enough."""

    def __init__(
        self,
        detectors: Sequence[Detector] | None = None,
        *,
        cache_entries: int = CACHE_ENTRIES,
        budget: float = BUDGET,
    ):
        self.budget = budget
        self.detectors = tuple(load_detectors() if detectors is None else detectors)
        by_word: dict[str, list[int]] = {}
        for i, det in enumerate(self.detectors):
            for word in det.keywords:
                by_word.setdefault(word, []).append(i)
        words = list(by_word)
        # Per keyword, its detectors: windowed ones first, as the window order (which
        # breaks ties between equal findings) has always been.
        self._targets = [
            tuple(sorted(by_word[w], key=lambda i: self.detectors[i].anchor)) for w in words
        ]
        # The hidden-form passes' triggers ride on the same pass: invisible characters
        # (their UTF-8) and their JSON escapes.
        self._triggers = len(words)
        self._finders = tuple(d for d in self.detectors if d.finder)  # no keywords
        self._generic_ids = frozenset(d.id for d in self.detectors if d.generic)
        # Vendor formats whose keyword starts the token (and so lost their guards).
        self._leading = frozenset(i for i, d in enumerate(self.detectors) if d.glued)
        # Guarded formats' twins without their guards (low tier): detectors.loosened.
        self._loose = [loosened(d) for d in self.detectors]
        # Keywords written backwards (`rev`), rot13-ed (`tr A-Za-z N-ZA-Mn-za-m`) or
        # rot47-ed: a hit has its line turned back and scanned (turned.py). Short ones
        # would hit ordinary text; in 2 MB of it the reversed and rot13-ed keywords hit
        # about 13 times, the rot47-ed ones 62 (mostly hex: `ghp_` is `89A0`), each read
        # over at most 1 KB. Lower-cased: the pass folds case (rot47 makes capitals).
        self._turned = [
            (turn, k)
            for turn in turned.TURNS
            for k in dict.fromkeys(
                turn.apply(cased).lower()
                for w in words
                if len(w) >= turned.MIN_KEYWORD
                for cased in (w, w.upper())  # rot47 is not case-blind: `AKIA`'s own case
            )
            if k not in words and not k.isdigit()  # (rot47 turns `abcd` into `2345`)
        ]
        self._turned_at = self._triggers + len(_TRIGGERS)
        self._prefilter = ahocorasick_rs.BytesAhoCorasick(
            [w.encode() for w in words]
            + [w.encode() for w in _TRIGGERS]
            + [k.encode() for _, k in self._turned],
            implementation=ahocorasick_rs.Implementation.DFA,
        )
        self._cache: OrderedDict[Hashable, tuple[Finding, ...]] = OrderedDict()
        self._cache_entries = cache_entries
        self._lock = threading.Lock()
        # Only the shipped detectors are what a screening worker loads (scan_pool.py).
        self.shipped = detectors is None

    def scan(self, text: str) -> list[Finding]:
        """Findings in `text`, sorted by start, never overlapping."""
        if len(text) < MIN_TEXT:
            return []
        key = content_key(text)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None:
                self._cache.move_to_end(key)
                return list(cached)
        found = self._scan(text)
        with self._lock:
            self._cache[key] = found
            while len(self._cache) > self._cache_entries:
                self._cache.popitem(last=False)
        return list(found)

    def scan_uncached(self, text: str) -> tuple[Finding, ...]:
        """`scan(text)`, neither looked up nor kept in the cache."""
        return self._scan(text) if len(text) >= MIN_TEXT else ()

    def remember(self, text: str, found: Sequence[Finding]) -> None:
        """File `found` as `text`'s findings (a screening worker scanned it with the shipped
        detectors), so `scan(text)` finds them worked out."""
        if len(text) < MIN_TEXT:
            return
        with self._lock:
            self._cache[content_key(text)] = tuple(found)
            while len(self._cache) > self._cache_entries:
                self._cache.popitem(last=False)

    def known(self, text: str) -> bool:
        """Whether `scan(text)` would find its findings worked out (or has none to find)."""
        return len(text) < MIN_TEXT or content_key(text) in self._cache

    def _scan(
        self,
        text: str,
        depth: int = 0,
        deadline: _Deadline | None = None,
        loose: bool = True,
    ) -> tuple[Finding, ...]:
        """Findings of every detector in `text`, then in the views that undo hiding
        (invisible characters, folds, base64 layers). Past the time budget the whole
        string is one high-tier finding: what could not be screened is asked about.
        `loose`: with the guarded formats' loosened twins (not in a turned reading)."""
        if deadline is None:
            deadline = _Deadline(self.budget)
        view = unescaped_view(text)
        ranked: list[tuple[tuple[bool, bool, int, int], Finding]] = []
        regions: list[tuple[int, int]] = []  # where a vendor token may sit folded
        heads: list[int] = []  # where its keyword is
        narrow: list[int] = []  # ... of 4+ characters (a narrow fold's first line: hidden.py)
        spans: list[tuple[int, int]] = []  # and where it ends
        leads: set[int] = set()  # where a keyword that starts its token is
        n = len(view)
        found = self._find_keywords(view)
        for i, hits in found.hits.items():
            if deadline.passed():
                return (self._over_budget(text),)
            det = self.detectors[i]
            windows = hits if det.anchor else _windows(hits, det.before, det.after, n)
            if det.tier is Tier.HIGH and det.after < FOLDED_MAX:  # vendor formats
                regions += windows
                heads += (start for start, _ in hits)
                narrow += (start for start, end in hits if end - start >= hidden.NARROW_KEYWORD)
                spans += hits
                if i in self._leading:
                    leads.update(start for start, _ in hits)
            for f in det.find(view, windows, hits, deadline.passed):
                ranked.append(((f.tier is not Tier.HIGH, det.generic, f.start - f.end, f.start), f))
            if loose and (twin := self._loose[i]) is not None:
                for f in twin.find(view, windows, hits, deadline.passed):
                    ranked.append(((True, False, f.start - f.end, f.start), f))
        # Base64 runs, found once: the hidden-form pass decodes them, and the finders look
        # in them for base58 keys.
        runs = list(hidden.base64_runs(view, found.data))
        reading = wallets.Reading(view, runs, found.data)  # read once for every finder
        for det in self._finders:
            for f in det.found(reading):
                ranked.append(((f.tier is not Tier.HIGH, False, f.start - f.end, f.start), f))
        if deadline.passed():  # the last detector may have stopped short
            return (self._over_budget(text),)
        plain = _resolve(ranked)

        def inner(sub: str, level: int) -> tuple[Finding, ...]:
            return self._scan(sub, level, deadline, loose) if len(sub) >= MIN_TEXT else ()

        def guarded(sub: str, level: int) -> tuple[Finding, ...]:
            # A turned reading (rot47, reversed, swapped case) of random text holds a short
            # keyword by chance (rot47 turns hex into `hf_`): no loosened twin reads it.
            return self._scan(sub, level, deadline, False) if len(sub) >= MIN_TEXT else ()

        regions.sort()
        extra = [
            *hidden.split_findings(
                view,
                regions,
                inner,
                depth,
                found.triggers,
                sorted(heads),
                plain,
                leads,
                sorted(narrow) if depth == 0 else (),  # (a rebuilt text's own: no)
            ),
            *hidden.base64_findings(view, inner, depth, runs),
            # Dumps as printed (od -c's `\n` cells are escapes the view would undo), and
            # as the view reads them (a dump inside JSON-escaped text); same offsets.
            *dumps.findings(
                text, inner, depth, found.data if view is text else None, found.triggers
            ),
            *(
                dumps.findings(view, inner, depth, found.data, found.triggers)
                if view is not text
                else ()
            ),
            *turned.findings(
                view, self._turns(view, found.turned, spans, plain, depth), guarded, depth, text
            ),
            *self._lookalike(text, depth, deadline),
            *self._escaped(text, depth, deadline, found.triggers),
        ]
        if deadline.passed():
            return (self._over_budget(text),)
        if not extra:
            return plain
        generic = {d.id for d in self.detectors if d.generic}
        for f in extra:
            if f.rule_id in generic and any(p.start < f.end and f.start < p.end for p in plain):
                continue  # a generic match across a fold is no better than the one found
            ranked.append(
                ((f.tier is not Tier.HIGH, f.rule_id in generic, f.start - f.end, f.start), f)
            )
        return _resolve(ranked)

    def _turns(
        self,
        view: str,
        hits: dict[turned.Turn, list[int]],
        spans: list[tuple[int, int]],
        plain: Sequence[Finding],
        depth: int,
    ) -> dict[turned.Turn, list[int]]:
        """The turned keywords' hits, and the vendor keywords to read with their case
        swapped (at depth 0, as every turn): those no vendor finding covers."""
        if depth > 0 or not spans:
            return hits
        # A generic finding (`TOKEN=GHP_...`'s assignment) does not read the token.
        vendor = [f for f in plain if f.rule_id not in self._generic_ids]
        swapped = turned.swapped_hits(view, sorted(spans), vendor)
        return {**hits, turned.SWAPCASE: swapped} if swapped else hits

    def _lookalike(self, text: str, depth: int, deadline: _Deadline) -> list[Finding]:
        """Findings in text as sent read back from lookalike characters (fullwidth,
        combining marks or tag characters between letters: gate/screen/lookalike.py),
        at their place in the text."""
        if depth > 0 or (view := lookalike.folded(text)) is None or len(view) < MIN_TEXT:
            return []
        return [
            Finding(*lookalike.origin(text, f.start, f.end), f.kind, f.rule_id, f.tier)
            for f in self._scan(view, 1, deadline)
        ]

    def _escaped(
        self, text: str, depth: int, deadline: _Deadline, triggers: frozenset[str]
    ) -> list[Finding]:
        """Findings in text as sent with its escapes decoded (`token%3Dghp_...`: a token
        glued to an escape ending in a letter or digit has no word boundary, and `%2F`
        inside one breaks it: gate/screen/escaped.py), over the escapes that spell them.
        Only the stretches around escapes that hold a keyword, or base64 written with
        escapes, are read again (a page of links escaped `%20` is mostly neither)."""
        if depth > 0:
            return []
        # The keyword pass read the view, where an escaped backslash (`\\x67`, text printed
        # as a JSON string) shows as blanks: such escapes are looked for in the text.
        if triggers.isdisjoint(escaped.TRIGGERS) and not any(e in text for e in _DOUBLED_ESCAPES):
            return []
        if (esc := escaped.view(text)) is None:
            return []
        hits = sorted(s for spans in self._find_keywords(esc.view).hits.values() for s, _ in spans)
        out = []
        for start, end in esc.windows():
            if end - start < MIN_TEXT:
                continue
            i = bisect.bisect_left(hits, start)
            if (i == len(hits) or hits[i] >= end) and not esc.base64_inside(start, end):
                continue
            out += [
                Finding(*esc.origin(start + f.start, start + f.end), f.kind, f.rule_id, f.tier)
                for f in self._scan(esc.view[start:end], 1, deadline)
            ]
        return out

    @staticmethod
    def _over_budget(text: str) -> Finding:
        from loguru import logger  # here: it imports asyncio, a third of `gate scan`'s start

        logger.warning(
            "secret screening of a {}-character string ran past its budget;"
            " it is held for a person",
            len(text),
        )
        return Finding(0, len(text), UNSCREENED_KIND, UNSCREENED_ID, Tier.HIGH)

    def windows(self, view: str) -> dict[int, list[tuple[int, int]]]:
        """Per detector index, the merged windows around its keywords' hits (for an
        anchored detector, the hits): the only text its regexes see. Keywords match ASCII
        case-insensitively."""
        n = len(view)
        return {
            i: hits
            if self.detectors[i].anchor
            else _windows(hits, self.detectors[i].before, self.detectors[i].after, n)
            for i, hits in self._find_keywords(view).hits.items()
        }

    def _find_keywords(self, view: str) -> _Keywords:
        data = view.encode("utf-8", "surrogatepass").lower()
        found = self._prefilter.find_matches_as_indexes(data, overlapping=True)
        if not found:
            return _Keywords(data, {}, frozenset())
        if len(data) != len(view):
            found = _char_offsets(data, found)
        by_word: defaultdict[int, list[tuple[int, int]]] = defaultdict(list)
        for word, start, end in found:
            by_word[word].append((start, end))
        hits: dict[int, list[tuple[int, int]]] = {}
        merged: set[int] = set()  # detectors whose hits come from more than one keyword
        targets, triggers = self._targets, self._triggers
        for word, spans in by_word.items():  # words in the order of their first hit
            if word >= triggers:
                continue
            for i in targets[word]:
                if (have := hits.get(i)) is None:
                    hits[i] = spans
                else:
                    hits[i] = have + spans
                    merged.add(i)
        # One keyword's hits are in order already: the pass reports them by where they
        # end, and they all have its length.
        for i in merged:
            hits[i].sort()
        return _Keywords(
            data,
            hits,
            frozenset(_TRIGGERS[w - triggers] for w in by_word if triggers <= w < self._turned_at),
            self._turned_hits(by_word),
        )

    def _turned_hits(
        self, by_word: dict[int, list[tuple[int, int]]]
    ) -> dict[turned.Turn, list[int]]:
        out: dict[turned.Turn, list[int]] = {}
        for w, spans in by_word.items():
            if w >= self._turned_at:
                turn = self._turned[w - self._turned_at][0]
                out.setdefault(turn, []).extend(start for start, _ in spans)
        return out


@dataclass(frozen=True, slots=True)
class _Keywords:
    """What the keyword pass found in a view: per detector index the (start, end) of its
    keywords, sorted, in the order the detectors were first hit; the hidden-form triggers
    seen; and the lowered UTF-8 it ran on."""

    data: bytes
    hits: dict[int, list[tuple[int, int]]]
    triggers: frozenset[str]
    turned: dict[turned.Turn, list[int]] = field(default_factory=dict)  # where, per turn


class _Deadline:
    """The string's CPU budget. Asking the thread's CPU clock is a system call (about a
    microsecond, more in a sandbox, and screening asks once per string missing the cache);
    the wall clock is cheap and never behind it. So the CPU clock is first read once the
    string has taken GRACE of wall time (most never do), and the budget counts from there:
    a string gets at most GRACE more CPU than the budget, never less."""

    __slots__ = ("_budget", "_cpu", "_start", "_wall")

    GRACE = 0.005

    def __init__(self, budget: float):
        now = time.perf_counter()
        self._start = now + min(self.GRACE, budget)
        self._wall = now + budget
        self._budget = budget
        self._cpu: float | None = None

    def passed(self) -> bool:
        now = time.perf_counter()
        if now < self._start:
            return False
        if self._cpu is None:
            self._cpu = time.thread_time() + self._budget
        return now >= self._wall and time.thread_time() >= self._cpu


def unescaped_view(text: str) -> str:
    """`text` with JSON/shell escapes replaced by same-length plain characters."""
    if "\\" not in text:
        return text
    parts = _ESCAPES.split(text)  # plain, escape, plain, ...: no call per escape
    parts[1::2] = map(_PLAIN.__getitem__, parts[1::2])
    return "".join(parts)


def content_key(text: str) -> Hashable:
    """What a per-content cache keys a string by (it never holds the text)."""
    # With hash randomization, str's hash is SipHash under a per-process random key, so no
    # text can be crafted to collide with a cached clean one; without it, use SHA-256.
    if sys.flags.hash_randomization:
        return len(text), hash(text)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()


def _char_offsets(data: bytes, hits: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Byte offsets of ASCII keyword hits in UTF-8 `data` → character offsets."""
    out, byte_pos, char_pos = [], 0, 0
    for word, start, end in sorted(hits, key=lambda h: h[1]):
        char_pos += len(data[byte_pos:start].decode("utf-8", "surrogatepass"))
        byte_pos = start
        out.append((word, char_pos, char_pos + end - start))
    return out


def _windows(hits: list[tuple[int, int]], before: int, after: int, n: int) -> list[tuple[int, int]]:
    """The windows around sorted keyword hits, overlapping ones merged."""
    merged: list[tuple[int, int]] = []
    last_start, last_end = -1, -1
    for start, end in hits:
        start = start - before if start > before else 0
        end = end + after if end + after < n else n
        if start <= last_end:
            if end > last_end:
                last_end = end
        else:
            if last_end >= 0:
                merged.append((last_start, last_end))
            last_start, last_end = start, end
    merged.append((last_start, last_end))
    return merged


def _resolve(ranked: list[tuple[tuple[bool, bool, int, int], Finding]]) -> tuple[Finding, ...]:
    """Overlapping findings: high tier first, then format-specific over generic, then the
    longest span."""
    kept: list[Finding] = []
    starts: list[int] = []
    for _, f in sorted(ranked, key=lambda r: r[0]):
        i = bisect.bisect_left(starts, f.start)
        if (i and kept[i - 1].end > f.start) or (i < len(kept) and kept[i].start < f.end):
            continue
        starts.insert(i, f.start)
        kept.insert(i, f)
    return tuple(kept)


def keyed_hash(value: str, key: bytes) -> str:
    """HMAC-SHA256 of a secret under the install's key: all that logs and audit may hold."""
    return hmac.new(key, value.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def placeholder(finding: Finding, value: str, key: bytes) -> str:
    """What replaces a secret: the same for the same value on every turn and after a
    restart (prompt caches keep working), different for different values."""
    return f"[gate: redacted {finding.kind} #{keyed_hash(value, key)[:8]}]"


def load_or_create_key(data_dir: Path) -> bytes:
    """The per-install placeholder key, `data_dir/secret.key` (0600), created once."""
    from loguru import logger

    path = data_dir / KEY_FILE
    try:
        key = path.read_bytes()
    except FileNotFoundError:
        pass
    else:
        if len(key) == KEY_BYTES:
            if path.stat().st_mode & 0o077:
                os.chmod(path, 0o600)
                logger.warning("{} was readable by others; made it owner-only", path)
            return key
        aside = path.with_name(f"{KEY_FILE}.corrupt-{time.strftime('%Y%m%d-%H%M%S')}")
        os.replace(path, aside)
        logger.warning(
            "{} is not a gate key ({} bytes); moved it to {} and made a new one"
            " (placeholders change once)",
            path,
            len(key),
            aside,
        )
    fresh = path.with_name(f".{KEY_FILE}.{os.getpid()}")
    dirs.write_private(fresh, os.urandom(KEY_BYTES))
    try:
        os.link(fresh, path)  # create-if-absent: two gates starting at once share one key
    except FileExistsError:
        pass
    finally:
        fresh.unlink(missing_ok=True)
    return path.read_bytes()
