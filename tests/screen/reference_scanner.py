"""The scanning engine as it was before issue 14's speed work, kept to test the fast one.

A plain copy of the window scan (every detector's regexes over every merged window around
its keywords), the anchored name walk and the hidden-form passes (dumps read everywhere,
not only where the keyword pass saw a trigger; turned keywords found by str.find), run on
the same detectors. tests/screen/test_differential.py checks that `Scanner` finds exactly what
this finds; nothing else uses it.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import re
from collections.abc import Callable, Iterator, Sequence

import ahocorasick_rs

from gate.screen import dumps, escaped, lookalike, turned, wallets
from gate.screen.detectors import (
    _NAME_CHARS,
    Detector,
    Finding,
    Tier,
    _secret_span,
    distinctive_prefix,
    loosened,
)
from gate.screen.hidden import NARROW_KEYWORD, _narrow_folds
from gate.screen.secrets import _PLAIN, FOLDED_MAX, MIN_TEXT

Scan = Callable[[str, int], Sequence[Finding]]
# After an anchored detector's keyword: the rest of the name, a closing quote, an operator
# (the plain backtracking form the scanner's possessive, once-per-name reading replaced).
_ASSIGNED = re.compile(
    r"""[\w.-]*(?:[ \t]?["'`])?\]?(?:[ \t]+(?:string|\[\]byte))?[ \t]*"""
    r"""(?:[=:?]|\.=|(?<=["'`])[ \t]*,)"""
)

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_ESCAPE = re.compile(r"""\\\\n?|\\["'nrt]""")


def unescaped_view(text: str) -> str:
    """The JSON-escaped view as it was first written: one substitution per escape."""
    if "\\" not in text:
        return text
    return _ESCAPE.sub(lambda m: _PLAIN[m.group()], text)


class ReferenceScanner:
    def __init__(self, detectors: Sequence[Detector]):
        self.detectors = tuple(detectors)
        by_word: dict[str, list[int]] = {}
        for i, det in enumerate(self.detectors):
            for word in det.keywords:
                by_word.setdefault(word, []).append(i)
        words = list(by_word)
        # Keywords turned (turned.py), found by plain searches below.
        self._turned = [
            (turn, k)
            for turn in turned.TURNS
            for k in dict.fromkeys(
                turn.apply(c).lower()
                for w in words
                if len(w) >= turned.MIN_KEYWORD
                for c in (w, w.upper())
            )
            if k not in words and not k.isdigit()
        ]
        self._targets = [
            (
                tuple(
                    (i, self.detectors[i].before, self.detectors[i].after)
                    for i in by_word[w]
                    if not self.detectors[i].anchor
                ),
                tuple(i for i in by_word[w] if self.detectors[i].anchor),
            )
            for w in words
        ]
        self._prefilter = ahocorasick_rs.BytesAhoCorasick(
            [w.encode() for w in words], implementation=ahocorasick_rs.Implementation.DFA
        )

    def scan(self, text: str) -> list[Finding]:
        return [] if len(text) < MIN_TEXT else list(self._scan(text))

    def _scan(self, text: str, depth: int = 0, loose: bool = True) -> tuple[Finding, ...]:
        view = unescaped_view(text)
        ranked: list[tuple[tuple[bool, bool, int, int], Finding]] = []
        regions: list[tuple[int, int]] = []
        for i, windows in self.windows(view).items():
            det = self.detectors[i]
            if det.tier is Tier.HIGH and det.after < FOLDED_MAX:
                regions += windows
            for f in _find(det, view, windows):
                ranked.append(((f.tier is not Tier.HIGH, det.generic, f.start - f.end, f.start), f))
            if loose and (twin := loosened(det)) is not None:  # guards dropped, low tier
                for f in _find(twin, view, windows):
                    ranked.append(((True, False, f.start - f.end, f.start), f))
        for det in self.detectors:
            if det.finder:  # no keyword: its function reads the whole view
                for f in det.found(wallets.Reading(view, list(base64_runs(view)))):
                    ranked.append(((f.tier is not Tier.HIGH, False, f.start - f.end, f.start), f))
        plain = _resolve(ranked)

        def inner(sub: str, level: int) -> tuple[Finding, ...]:
            return self._scan(sub, level, loose) if len(sub) >= MIN_TEXT else ()

        def guarded(sub: str, level: int) -> tuple[Finding, ...]:  # turned: no twins
            return self._scan(sub, level, False) if len(sub) >= MIN_TEXT else ()

        regions.sort()
        extra = [
            *split_findings(
                view,
                regions,
                inner,
                depth,
                self.heads(view),
                plain,
                self.heads(view, True),
                sorted({s for s, e in self.vendor_hits(view) if e - s >= NARROW_KEYWORD})
                if depth == 0
                else (),
            ),
            *base64_findings(view, inner, depth),
            # Dumps looked for everywhere (the scanner only where its triggers are).
            *dumps.findings(text, inner, depth),
            *(dumps.findings(view, inner, depth) if view is not text else ()),
            *turned.findings(view, self._turned_hits(view, plain, depth), guarded, depth, text),
            *_lookalike(text, depth, inner),
            *_escaped(text, depth, inner),
        ]
        if not extra:
            return plain
        generic = {d.id for d in self.detectors if d.generic}
        for f in extra:
            if f.rule_id in generic and any(p.start < f.end and f.start < p.end for p in plain):
                continue
            ranked.append(
                ((f.tier is not Tier.HIGH, f.rule_id in generic, f.start - f.end, f.start), f)
            )
        return _resolve(ranked)

    def _turned_hits(
        self, view: str, plain: Sequence[Finding], depth: int
    ) -> dict[turned.Turn, list[int]]:
        """Where each turned keyword starts, by str.find over the ASCII-lowered view; and
        (at depth 0) the vendor keywords in capitals only in no plain finding."""
        low = view.translate(_ASCII_LOWER)  # one character each: the same offsets
        out: dict[turned.Turn, list[int]] = {}
        for turn, k in self._turned:
            at = low.find(k)
            while at != -1:
                out.setdefault(turn, []).append(at)
                at = low.find(k, at + 1)
        swapped = sorted(
            start
            for start, end in self.vendor_hits(view)
            if depth == 0
            and re.fullmatch(r"[^a-z]*[A-Z][^a-z]*", view[start:end])
            and view[start:end].isascii()
            and not any(f.start <= start < f.end and not self._generic(f.rule_id) for f in plain)
        )
        if swapped:
            out[turned.SWAPCASE] = swapped
        return out

    def _generic(self, rule_id: str) -> bool:
        return any(d.id == rule_id and d.generic for d in self.detectors)

    def heads(self, view: str, leading: bool = False) -> list[int]:
        """Where a vendor detector's keyword starts (lower-cased view, any keyword); with
        `leading`, only a keyword that starts its token (a distinctive prefix)."""
        return sorted({start for start, _ in self.vendor_hits(view, leading)})

    def vendor_hits(self, view: str, leading: bool = False) -> set[tuple[int, int]]:
        """The (start, end) of each vendor detector's keyword hit (see heads)."""
        data = view.encode("utf-8", "surrogatepass").lower()
        out = set()
        for word, start, end in _char_offsets(
            data, self._prefilter.find_matches_as_indexes(data, overlapping=True)
        ):
            windowed, anchored = self._targets[word]
            if any(
                self.detectors[i].tier is Tier.HIGH
                and self.detectors[i].after < FOLDED_MAX
                and (not leading or distinctive_prefix(self.detectors[i].keywords))
                for i in [i for i, _, _ in windowed] + list(anchored)
            ):
                out.add((start, end))
        return out

    def windows(self, view: str) -> dict[int, list[tuple[int, int]]]:
        data = view.encode("utf-8", "surrogatepass").lower()
        hits = self._prefilter.find_matches_as_indexes(data, overlapping=True)
        if not hits:
            return {}
        if len(data) != len(view):
            hits = _char_offsets(data, hits)
        n = len(view)
        spans: dict[int, list[tuple[int, int]]] = {}
        for word, start, end in hits:
            windowed, anchored = self._targets[word]
            for i, before, after in windowed:
                spans.setdefault(i, []).append(
                    (start - before if start > before else 0, end + after if end + after < n else n)
                )
            for i in anchored:
                spans.setdefault(i, []).append((start, end))
        return {i: sorted(w) if self.detectors[i].anchor else _merge(w) for i, w in spans.items()}


def _find(det: Detector, view: str, windows: list[tuple[int, int]]) -> Iterator[Finding]:
    for m in _anchored(det, view, windows) if det.anchor else _search(det, view, windows):
        start, end = _secret_span(m)
        accepted = det._accept(m, view[start:end], end)
        if accepted is not None:
            yield Finding(start, accepted[1], det.kind, det.id, accepted[0])


def _search(det: Detector, view: str, windows: list[tuple[int, int]]) -> Iterator[re.Match[str]]:
    n = len(view)
    for ws, we in windows:
        for pattern in det.patterns:
            for m in pattern.finditer(view, ws, we):
                if m.end() == we < n:
                    m = pattern.match(view, m.start()) or m
                yield m


def _anchored(det: Detector, view: str, hits: list[tuple[int, int]]) -> Iterator[re.Match[str]]:
    done = -1
    for hit, end in hits:
        while end > hit and view[end - 1] not in _NAME_CHARS:  # `key=`: the name ends first
            end -= 1
        if not _ASSIGNED.match(view, end):
            continue
        while hit < end and view[hit] not in _NAME_CHARS:
            hit += 1
        lo = max(0, hit - det.before)
        start = lo + len(view[lo:hit].rstrip(_NAME_CHARS))
        if start <= done:
            continue
        done = start
        for pattern in det.patterns:
            if m := pattern.match(view, start):
                yield m


def _char_offsets(data: bytes, hits: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    out, byte_pos, char_pos = [], 0, 0
    for word, start, end in sorted(hits, key=lambda h: h[1]):
        char_pos += len(data[byte_pos:start].decode("utf-8", "surrogatepass"))
        byte_pos = start
        out.append((word, char_pos, char_pos + end - start))
    return out


def _merge(windows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    windows.sort()
    merged = [windows[0]]
    for start, end in windows[1:]:
        last_start, last_end = merged[-1]
        if start <= last_end:
            merged[-1] = (last_start, max(last_end, end))
        else:
            merged.append((start, end))
    return merged


def _resolve(ranked: list[tuple[tuple[bool, bool, int, int], Finding]]) -> tuple[Finding, ...]:
    kept: list[Finding] = []
    starts: list[int] = []
    for _, f in sorted(ranked, key=lambda r: r[0]):
        i = bisect.bisect_left(starts, f.start)
        if (i and kept[i - 1].end > f.start) or (i < len(kept) and kept[i].start < f.end):
            continue
        starts.insert(i, f.start)
        kept.insert(i, f)
    return tuple(kept)


# -- hidden forms ---------------------------------------------------------------------------

_INVISIBLE_CHARS = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_INVISIBLE = re.compile(f"[{_INVISIBLE_CHARS}]+")
_ESCAPED = re.compile(r"(?:\\u(?i:200[bcd]|2060|feff|00ad))+")
_FOLD = re.compile(
    r"[ \t]*(?:\d{1,7}→)?[A-Za-z0-9_+/.~-]{16,}"
    r"(\\?[ ]{0,2}\r?\n[ \t]*(?:\d{1,7}→)?)(?=[A-Za-z0-9_+/.~-]{4})"
)
_TOKEN_LINE = re.compile(r"[ \t]*(?:\d{1,7}→)?[A-Za-z0-9_+/.~-]{16,}\\?[ ]{0,3}\r?")
_CONTINUED = re.compile(
    r"(?<=[A-Za-z0-9_+/.~-])(?:\\|[ ]{3})\r?\n[ \t]*(?:\d{1,7}→)?"
    r"(?=[A-Za-z0-9_+/.~-])"
)
_B64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_B64_TABLE = bytes(ord("a") if c in _B64_CHARS else ord(" ") for c in range(256))
_RUN = b"a" * 40
REACH = 512
TAIL = 640  # from a keyword to its line's start or end, at most
TAIL_SCAN = TAIL
LAYERS = 2
_TEXT_TABLE = bytes(ord("a") if 32 <= c < 127 or c in b"\t\n\r" else ord(" ") for c in range(256))
_TEXT_RUN = b"a" * 16
PRINTABLE = 0.95


_TOKEN = "-A-Za-z0-9_+/.~"  # a character class's body
_JOIN_OP = r"(?:(?:\+|\.\.?|\|\|)[ \t]*)?"
_JOINED = re.compile(
    f"(?<=[{_TOKEN}=]) ?[\"'`][ \t]*{_JOIN_OP}(?:\\\\?\r?\n[ \t]*{_JOIN_OP})?[\"'`](?=[{_TOKEN}=])"
)


def cuts(
    view: str,
    regions: Sequence[tuple[int, int]],
    heads: Sequence[int],
    ends: set[int],
    narrow: Sequence[int] = (),
) -> tuple[list[tuple[int, int]], set[int]]:
    out = (
        [m.span() for m in _INVISIBLE.finditer(view)]
        if not view.isascii() and any(c in view for c in _INVISIBLE_CHARS)
        else []
    )
    if "\\u" in view:
        out += [m.span() for m in _ESCAPED.finditer(view)]
    reach: dict[int, int] = {}
    for start, end in regions:
        line = view.rfind("\n", 0, start) + 1
        while line < end:
            reach[line] = max(reach.get(line, 0), end)
            nl = view.find("\n", line, end)
            if nl == -1:
                break
            line = nl + 1
    for line, end in sorted(reach.items()):
        nl = view.find("\n", line, end)
        if nl == -1:
            continue
        continued = view.endswith(("\\", "   ", "\\\r", "   \r"), line, nl)
        if not continued and not _TOKEN_LINE.fullmatch(view, line, nl):
            continue
        while nl != -1:
            if (m := _FOLD.match(view, line, end)) and m.start(1) <= nl < m.end(1):
                out.append(m.span(1))
            elif m := _CONTINUED.search(view, max(line, nl - 4), min(end, nl + 40)):
                out.append(m.span())
            else:
                break
            line = nl + 1
            nl = view.find("\n", line, end)
    for start, end in regions:  # string literals joined in code, around a keyword
        out += [m.span() for m in _JOINED.finditer(view, start, end)]
    # Tokens folded narrower than 16 characters a line: gate's own walk (not mirrored).
    out += _narrow_folds(view, narrow)
    tails, marks = _tails(view, heads, {a for a, _ in out}, ends)
    return sorted({*out, *tails}), marks


def _tails(
    view: str, heads: Sequence[int], taken: set[int], ends: set[int]
) -> tuple[list[tuple[int, int]], set[int]]:
    """Breaks around the run of token characters holding a keyword that shares its line,
    and where each such break starts (taken already or not)."""
    out = []
    marks: set[int] = set()
    seen: set[int] = set()
    for head in heads:
        line = view.rfind("\n", 0, head) + 1
        before = re.fullmatch(f"[ \\t]*(?:\\d{{1,7}}→)?([{_TOKEN}]+)", view[line:head])
        if line > 0 and head - line < TAIL and before:
            prev = re.search(f"[{_TOKEN}]{{3}}[A-Za-z0-9](\\\\?[ ]{{0,2}}\\r?\\n)\\Z", view[:line])
            if prev and prev.start(1) not in taken and _after_text(view, prev.start(1)):
                taken.add(prev.start(1))
                marks.add(prev.start(1))
                out.append((prev.start(1), line + before.start(1)))
        nl = view.find("\n", head)
        if nl == -1 or nl - head > TAIL + 7 or nl in seen:
            continue
        seen.add(nl)
        sep = r"(\\?[ ]{0,2}\r?\n[ \t]*(?:\d{1,7}→)?)"
        fold = re.match(
            f"[{_TOKEN}]{{1,{TAIL}}}{sep}(?=[{_TOKEN}])(?!\\d{{1,7}}→)",
            view[head : head + TAIL + 48],
        )
        if fold is None or not _after_text(view, head):
            continue
        after = view[head + fold.end(1) :]
        word = re.match(f"([A-Z]?[a-z_-]*|[A-Z_-]*)(?![{_TOKEN}])|[{_TOKEN}]*[=:]", after)
        if head + fold.start(1) in ends and word:
            continue
        marks.add(head + fold.start(1))
        if head + fold.start(1) in taken:
            continue
        taken.add(head + fold.start(1))
        out.append((head + fold.start(1), head + fold.end(1)))
        width, line = nl - view.rfind("\n", 0, head), nl + 1
        while view.find("\n", line, line + width) == line + width - 1:
            nl = line + width - 1
            if nl in seen:
                break
            seen.add(nl)
            m = _FOLD.match(view, line, nl + 48)
            if not m or not m.start(1) <= nl < m.end(1):
                break
            if m.start(1) not in taken:
                taken.add(m.start(1))
                marks.add(m.start(1))
                out.append(m.span(1))
            line = nl + 1
    return out, marks


def _after_text(view: str, at: int) -> bool:
    line = view.rfind("\n", 0, at) + 1
    if at - line >= TAIL:  # (only so far back is looked at)
        line = at - TAIL
    return not re.fullmatch(f"[ \\t]*(?:\\d{{1,7}}→)?[{_TOKEN}]*", view[line:at])


def split_findings(
    view: str,
    regions: Sequence[tuple[int, int]],
    scan: Scan,
    depth: int,
    heads: Sequence[int],
    plain: Sequence[Finding],
    leads: Sequence[int],
    narrow: Sequence[int] = (),
) -> list[Finding]:
    if depth > LAYERS:
        return []
    found: list[Finding] = []
    pending, tails = cuts(
        view, regions, heads, {f.end for f in plain if f.tier is Tier.HIGH}, narrow
    )
    whole = {(f.start, f.rule_id) for f in plain}
    while pending:
        group = [pending.pop(0)]
        while pending and pending[0][0] - group[-1][1] < REACH:
            group.append(pending.pop(0))
        tailed = any(start in tails for start, _ in group)
        reach = TAIL_SCAN if tailed else REACH
        lo, hi = max(0, group[0][0] - reach), min(len(view), group[-1][1] + reach)
        tries = [group]
        if tailed and len(group) > 1 and "\n" in view[group[-1][0] : group[-1][1]]:
            tries.append(group[:-1])
        first = max(depth, 1) if tailed else depth
        for level, cut in zip((first, LAYERS + 1), tries, strict=False):
            parts, out_starts, in_starts, pos, size = [], [], [], lo, 0
            for start, end in cut:
                start = max(start, pos)
                out_starts.append(size)
                in_starts.append(pos)
                parts.append(view[pos:start])
                size += start - pos
                pos = max(pos, end)
            out_starts.append(size)
            in_starts.append(pos)
            parts.append(view[pos:hi])
            for f in scan("".join(parts), level):
                start = _to_view(f.start, out_starts, in_starts)
                end = _to_view(f.end - 1, out_starts, in_starts) + 1
                if end - start == f.end - f.start:
                    continue
                if any(start < b < end and b in leads for _, b in cut):
                    continue
                if (start, f.rule_id) in whole and any(start < t < end for t in tails):
                    last = view[start:end].split("\n")[-1]
                    rest = re.fullmatch(r"[ \t]*(?:\d{1,7}→)?([^\s=:]*=*)", last)
                    if (
                        re.match(f"[{_TOKEN}=:]", view[end : end + 1])
                        or not rest
                        or re.fullmatch(r"[A-Z]?[a-z_-]*|[A-Z_-]*", rest[1])
                    ):
                        continue
                found.append(Finding(start, end, f.kind, f.rule_id, f.tier))
    return found


def _to_view(offset: int, out_starts: list[int], in_starts: list[int]) -> int:
    i = bisect.bisect_right(out_starts, offset) - 1
    return in_starts[i] + offset - out_starts[i]


def base64_runs(view: str) -> Iterator[tuple[int, int]]:
    raw = view.encode("utf-8", "surrogatepass")
    data = raw.translate(_B64_TABLE)
    ascii_only = len(data) == len(view)
    pos = data.find(_RUN)
    while pos != -1:
        end = data.find(b" ", pos)
        end = len(data) if end == -1 else end
        start, stop = pos, end
        if not ascii_only:
            start = len(raw[:pos].decode("utf-8", "surrogatepass"))
            stop = start + end - pos
        for _ in range(2):
            if stop < len(view) and view[stop] == "=":
                stop += 1
        yield start, stop
        pos = data.find(_RUN, end)


def base64_findings(view: str, scan: Scan, depth: int) -> list[Finding]:
    if depth >= LAYERS:
        return []
    found = []
    for start, end in base64_runs(view):
        text = decode(view[start:end])
        if text is None:
            continue
        inner = scan(text, depth + 1)
        if inner:
            best = min(inner, key=lambda f: (f.tier != "high", f.start - f.end))
            found.append(Finding(start, end, best.kind, best.rule_id, best.tier))
    return found


def decode(run: str) -> str | None:
    altchars = b"-_" if ("-" in run or "_" in run) else None
    if altchars and ("+" in run or "/" in run):
        return None
    body = run.rstrip("=")
    try:
        data = base64.b64decode(body + "=" * (-len(body) % 4), altchars=altchars, validate=True)
    except (binascii.Error, ValueError):
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = ""
    if text and sum(c.isprintable() or c in "\n\r\t" for c in text) >= PRINTABLE * len(text):
        return text
    marked = data.translate(_TEXT_TABLE)
    runs, pos = [], marked.find(_TEXT_RUN)
    while pos != -1:
        end = marked.find(b" ", pos)
        end = len(data) if end == -1 else end
        runs.append(data[pos:end])
        pos = marked.find(_TEXT_RUN, end)
    return b"\n".join(runs).decode("ascii") if runs else None


def _lookalike(
    text: str, depth: int, inner: Callable[[str, int], tuple[Finding, ...]]
) -> list[Finding]:
    """Findings in the view that reads lookalike characters back as ASCII, in text as sent."""
    if depth > 0 or (view := lookalike.folded(text)) is None:
        return []
    return [
        Finding(*lookalike.origin(text, f.start, f.end), f.kind, f.rule_id, f.tier)
        for f in inner(view, 1)
    ]


def _escaped(
    text: str, depth: int, inner: Callable[[str, int], tuple[Finding, ...]]
) -> list[Finding]:
    """Findings in the view with escapes decoded, in text as sent: every stretch around
    escapes (the scanner reads only those that hold a keyword or escaped base64)."""
    if depth > 0 or (esc := escaped.view(text)) is None:
        return []
    return [
        Finding(*esc.origin(start + f.start, start + f.end), f.kind, f.rule_id, f.tier)
        for start, end in esc.windows()
        for f in inner(esc.view[start:end], 1)
    ]
