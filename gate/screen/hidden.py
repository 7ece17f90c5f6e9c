"""Secrets written so that no detector sees them whole: split by invisible characters or
line folds, or wrapped in base64. Found in rebuilt views, reported at original offsets."""

from __future__ import annotations

import binascii
import bisect
import re
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence

from gate.screen.detectors import UNSCREENED_ID, UNSCREENED_KIND, Finding, Tier
from gate.screen.unpack import SIGNATURES, Budget, inflate, magic_at

# Zero-width space/joiners, word joiner, BOM, soft hyphen: invisible in a terminal or a
# diff, and enough to break every token regex.
_INVISIBLE_CHARS = "\u200b\u200c\u200d\u2060\ufeff\u00ad"
_INVISIBLE = re.compile(f"[{_INVISIBLE_CHARS}]+")
# The same JSON-escaped; a pattern starting with a literal (\\u) is searched at C speed.
_ESCAPED = re.compile(r"(?:\\u(?i:200[bcd]|2060|feff|00ad))+")
_ESCAPES = tuple(f"\\u{ord(c):04x}" for c in _INVISIBLE_CHARS)
# Found by the scanner's keyword pass (lower-cased UTF-8): only a string holding one of
# these is searched for invisible characters.
TRIGGERS = (*_INVISIBLE_CHARS, *_ESCAPES)
# A token folded over lines (fold -w, a wrapped log, a shell `\` continuation): a line of
# token characters only, ending in a newline (escaped ones read as spaces and a newline in
# the unescaped view) and continued by more token characters; a Read tool's line numbers
# (`  12→`) may start either line.
_FOLD = re.compile(  # matched at a line's start
    r"[ \t]*(?:\d{1,7}→)?[A-Za-z0-9_+/.~-]{16,}"
    r"(\\?[ ]{0,2}\r?\n[ \t]*(?:\d{1,7}→)?)(?=[A-Za-z0-9_+/.~-]{4})"
)
# The line a folded token starts on: token characters to its end (or a continuation).
_TOKEN_LINE = re.compile(r"[ \t]*(?:\d{1,7}→)?[A-Za-z0-9_+/.~-]{16,}\\?[ ]{0,3}\r?")
# A newline that could end a fold's first line (what _TOKEN_LINE or a continuation ends
# with), found by a literal search for newlines: where none is, no line is walked.
_TAILS = [f"{bs}{' ' * n}{cr}" for bs in ("", "\\\\") for n in range(4) for cr in ("", "\r")]
_FOLD_END = re.compile(
    "\n(?:"
    + "|".join(
        [f"(?<=[A-Za-z0-9_+/.~-]{{16}}{tail}\n)" for tail in _TAILS]
        + [f"(?<={tail}\n)" for tail in ("\\\\", "\\\\\r", "   ", "   \r")]
    )
    + ")"
)
# A token that starts on a line after other text (`export TOKEN=ghp_...` wrapped at 80
# columns, a log line's tail) and goes on on the next: matched at a vendor keyword, token
# characters to the line's end, then a line break (or its escape) and one more at least
# (`fold` leaves a token's last character alone on a line as readily as any other), that
# starts no Read line number.
_TAIL_FOLD = re.compile(
    r"[A-Za-z0-9_+/.~-]{1,640}"
    r"(\\?[ ]{0,2}\r?\n[ \t]*(?:\d{1,7}→)?)(?=[A-Za-z0-9_+/.~-])(?!\d{1,7}→)"
)
_TAIL_REACH = 640  # characters from a keyword to its line's start or end, at most
# A token's last line: a Read line number, then its rest (no assignment; padding ends it).
_LAST_LINE = re.compile(r"[ \t]*(?:\d{1,7}→)?([^\s=:]*=*)")
_WORD = re.compile(r"[A-Z]?[a-z_-]*|[A-Z_-]*")  # a name: no digit, one case or capitalised
# A next line that starts with a name: a word (the whole run) or a run before `=` or `:`.
_NAME_NEXT = re.compile(rf"(?:{_WORD.pattern})(?![A-Za-z0-9_+/.~-])|[A-Za-z0-9_+/.~-]*[=:]")
_RUN_GOES_ON = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/.~-=:")
# A line from its start to a keyword: indentation, a Read line number, then token
# characters (group 1: where they start; the keyword is not the first of them when any).
_TOKEN_BEFORE = re.compile(r"[ \t]*(?:\d{1,7}→)?([A-Za-z0-9_+/.~-]*)")
# The end of a line that ends in token characters, the last a letter or digit (no
# `-----BEGIN ...-----`), searched for in the 48 characters before the next line: group 1
# is the break (a continuation's `\\`, spaces, CR kept out of the token).
_FOLD_BEFORE = re.compile(r"[A-Za-z0-9_+/.~-]{3}[A-Za-z0-9](\\?[ ]{0,2}\r?\n)\Z")
# A token folded narrower than a _FOLD's first line (`fold -w8`, `cut -c` in a loop):
# lines of 2 to 15 token characters all of one width, then a last one no wider (escaped
# newlines read as spaces and a newline in the view).
_NARROW_WIDTH = 15  # token characters on a narrow line, at most
NARROW_KEYWORD = 4  # characters of a keyword that starts a narrow fold, at least
_NARROW_LEAD = 3  # characters before the keyword on a narrow fold's first line, at most
_NARROW_LINE = re.compile(rf"([A-Za-z0-9_+/.~-]{{1,{_NARROW_WIDTH}}})([ ]{{0,2}}\r?\n)")
_FOLD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+/.~-")
_NARROW_MIN = 2  # line breaks taken out of a narrow fold at least (three lines)
_NARROW_LINES = 160  # lines of one narrow fold at most (a 600-character token at 4)
# A shell line continuation inside a token, raw (`\` newline) or JSON-escaped (which the
# unescaped view shows as three spaces and a newline).
_CONTINUED = re.compile(
    r"(?<=[A-Za-z0-9_+/.~-])(?:\\|[ ]{3})\r?\n[ \t]*(?:\d{1,7}→)?"
    r"(?=[A-Za-z0-9_+/.~-])"
)
_B64_CHARS = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/_-"
_B64_TABLE = bytes(ord("a") if c in _B64_CHARS else ord(" ") for c in range(256))
_RUN = b"a" * 40
REACH = 512  # characters rescanned on each side of a cut
# ... of a group with a fold after other text: the token starts before it, up to a line
# away (the longest tokens, 1Password's and Dropbox's, are 600 characters).
TAIL_SCAN = _TAIL_REACH
LAYERS = 2  # base64 inside base64, no deeper
# A depth past every layer's: text scanned by the detectors alone, no hidden form read.
PLAIN_ONLY = LAYERS + 1
# Compressed data inside one string's runs is inflated to at most this much, in all (a
# larger blob is read as it is; the denied-file screen withholds such a blob whole).
INFLATE_PER_STRING = 16 << 20
_HEAD = 48  # bytes of a decoded run looked at for a compression signature
_SIGNATURE_STARTS = frozenset(bytes([s[0]]) for s in SIGNATURES)
# In binary data, a token could hide in a stretch of 16+ printable bytes.
_TEXT_TABLE = bytes(ord("a") if 32 <= c < 127 or c in b"\t\n\r" else ord(" ") for c in range(256))
_TEXT_RUN = b"a" * 16
PRINTABLE = 0.95  # share of printable characters for decoded bytes to count as text
_URL_SAFE = bytes.maketrans(b"-_", b"+/")
WRAPS = frozenset({60, 64, 76})  # `base64`, `base32`: 76 columns; `xxd -p`: 60; PEM: 64
_B64_STANDARD = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_B64_LINE = re.compile(r" ?\r?\n([A-Za-z0-9+/]+={0,2})(?![A-Za-z0-9+/=_-])")
_HEX_DIGITS = "0123456789abcdefABCDEF"
_HEX_LINE = re.compile(r" ?\r?\n([0-9A-Fa-f]{2,})(?![0-9A-Za-z+/=_-])")
_IN_UTF8 = bytes(c for c in range(256) if c not in (0xC0, 0xC1) and c < 0xF5)

Scan = Callable[[str, int], Sequence[Finding]]


def cuts(
    view: str,
    regions: Sequence[tuple[int, int]],
    triggers: Collection[str] | None = None,
    heads: Sequence[int] = (),
    ends: Collection[int] = (),
    narrow: Sequence[int] = (),
) -> tuple[list[tuple[int, int]], set[int]]:
    """Spans to take out of `view`: invisible characters anywhere, line folds inside
    `regions` (the windows around vendor keywords: a folded token keeps its prefix on
    its first line), and folds of a token that starts at one of `heads` (the keywords'
    offsets, sorted) after other text on its line (`ends`: where the high-tier findings in `view`
    as it is end). `triggers`: which of TRIGGERS `view` holds, if known. With them, the starts of
    the cuts that end such a first line."""
    if triggers is None:
        triggers = [t for t in TRIGGERS if t in view.lower()]
    out = (
        [m.span() for m in _INVISIBLE.finditer(view)]
        if any(c in triggers for c in _INVISIBLE_CHARS)
        else []
    )
    if any(e in triggers for e in _ESCAPES):
        out += [m.span() for m in _ESCAPED.finditer(view)]
    # A fold's first line ends in a newline inside a window (every line a window touches
    # ends at or after the window's start), so only windows holding a newline that can
    # end one (_FOLD_END) are walked; a window without one never sets how far a walk from
    # such a line reaches (it would have held that newline).
    folded = [(start, end) for start, end in regions if _FOLD_END.search(view, start, end)]
    if folded:
        out += _folds(view, folded)
    if narrow:
        out += _narrow_folds(view, narrow)
    if regions and ('"' in view or "'" in view or "`" in view):
        out += _joins(view, regions)
    tails, marks = _tail_folds(view, heads, out, ends) if heads else ([], set())
    return sorted({*out, *tails}), marks


# String literals joined in code around a vendor keyword (`"ghp_abc" + "def..."`, Python's
# implicit concatenation over lines, shell's `'abc''def'`, SQL's `||`, Lua's `..`, PHP's
# `.`): a token written in pieces. The cut: a closing quote after a token character (and
# the space an escaped quote leaves in the view), what joins (on one line, or over a line
# break), the opening quote before one.
_JOINED = re.compile(
    r"(?<=[A-Za-z0-9_+/=.~-]) ?[\"'`][ \t]*(?:(?:\+|\.\.?|\|\|)[ \t]*)?"
    r"(?:\\?\r?\n[ \t]*(?:(?:\+|\.\.?|\|\|)[ \t]*)?)?[\"'`](?=[A-Za-z0-9_+/=.~-])"
)


def _joins(view: str, regions: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The joins of string literals in `regions` (sorted), overlapping ones read as one
    (a join across where one ends and the next begins is read whole)."""
    out: list[tuple[int, int]] = []
    lo, hi = regions[0]
    for start, end in [*regions[1:], (len(view) + 1, len(view) + 1)]:
        if start <= hi:
            hi = max(hi, end)
            continue
        out += [m.span() for m in _JOINED.finditer(view, lo, hi)]
        lo, hi = start, end
    return out


def _tail_folds(
    view: str, heads: Sequence[int], found: list[tuple[int, int]], ends: Collection[int]
) -> tuple[list[tuple[int, int]], set[int]]:
    """Folds of a token around one of its keywords where the token shares its line with
    other text: the break after the keyword's run of token characters (and those after
    whole lines of token as long as the first: a token wrapped over three lines), and the
    break before it when the run starts its line after token characters the keyword is
    not the first of, and the line before ends in token characters (a keyword at a
    token's end: `..._mmk`, `...-us13`). A line all token (a base64 block's) is left to
    _folds; so is a line that ends where a high-tier finding does, before a name (`NAME=`,
    a word: _rest_of_token would take nothing past it). Each line is looked at once, in
    reach of a keyword only. With them, where every fold after other text starts, `found`
    (a shell continuation) or not."""
    out: list[tuple[int, int]] = []
    marks: set[int] = set()
    taken = {start for start, _ in found}
    seen: set[int] = set()  # line ends already looked at
    starts: set[int] = set()  # line starts already looked at (the first keyword on a
    # line decides the break before it: a later one has the same run, or none)
    # Past the end of a line whose breaks are both decided, its later keywords skipped
    # (`heads` is sorted): a line of 150 keywords costs one step, not 150.
    i, count = 0, len(heads)
    while i < count:
        head = heads[i]
        i += 1
        line = view.rfind("\n", max(0, head - _TAIL_REACH), head) + 1
        if line and line not in starts:
            lead = _TOKEN_BEFORE.fullmatch(view, line, head)
            if lead is None or lead.start(1) < head:  # else: the keyword starts the run
                starts.add(line)
            if lead is not None and lead.start(1) < head:  # token characters before it
                b = _FOLD_BEFORE.search(view, max(0, line - 48), line)
                if b is not None and b.start(1) not in taken and _after_text(view, b.start(1)):
                    taken.add(b.start(1))
                    marks.add(b.start(1))
                    out.append((b.start(1), lead.start(1)))
        nl = view.find("\n", head, head + _TAIL_REACH + 8)
        if nl != -1 and (not line or line in starts):
            i = bisect.bisect_left(heads, nl, i)
        if nl == -1 or nl in seen:
            continue
        seen.add(nl)
        m = _TAIL_FOLD.match(view, head, head + _TAIL_REACH + 48)
        if m is None or not m.start(1) <= nl < m.end(1) or not _after_text(view, head):
            continue  # (a line all token, a base64 block's, is _folds')
        if m.start(1) in ends and _NAME_NEXT.match(view, m.end(1)):
            continue
        marks.add(m.start(1))
        if m.start(1) in taken:  # a shell continuation, cut by _folds
            continue
        taken.add(m.start(1))
        out.append(m.span(1))
        # Whole lines of token after it, as long as the first (the width it was wrapped
        # at), each folded into the next; a shorter line is the token's last.
        width, line = nl - view.rfind("\n", 0, head), nl + 1
        while (nl := view.find("\n", line, line + width)) == line + width - 1 and nl not in seen:
            seen.add(nl)
            fold = _FOLD.match(view, line, nl + 48)
            if not fold or not fold.start(1) <= nl < fold.end(1):
                break
            if fold.start(1) not in taken:  # (a window's walk may have stopped short)
                taken.add(fold.start(1))
                marks.add(fold.start(1))
                out.append(fold.span(1))
            line = nl + 1
    return out, marks


def _after_text(view: str, at: int) -> bool:
    """Whether the line `at` is on holds more than token characters before it (within
    _TAIL_REACH of it: a longer run is no token's)."""
    line = view.rfind("\n", max(0, at - _TAIL_REACH), at) + 1
    if not line and at > _TAIL_REACH:
        line = at - _TAIL_REACH
    return _TOKEN_BEFORE.fullmatch(view, line, at) is None


def _narrow_folds(view: str, heads: Sequence[int]) -> list[tuple[int, int]]:
    """The line breaks of tokens folded narrower than 16 characters a line (`fold -w8`)
    whose first line starts with a vendor keyword of 4+ characters (`heads`, sorted: a
    shorter one starts a short line of random text by chance), or with at most 2
    characters before it (`x${TOKEN}`): lines of token characters alone, all of the first
    one's width, then a last one no wider. At least three lines: two short lines of text
    are no fold (and a keyword inside a short line of random text is, by chance, often)."""
    out: list[tuple[int, int]] = []
    done = -1  # where the last fold ended, or the last line walked
    last = -1
    starts = frozenset(heads)  # a later line that starts with a keyword is the next item
    for head in heads:
        if head == last:
            continue  # (several detectors share a keyword)
        last = head
        lo = max(0, head - _NARROW_LEAD)
        nl = view.rfind("\n", lo, head)
        if nl == -1 and lo > 0:
            continue  # the keyword is further into its line than a token's start
        line = nl + 1
        if line <= done:
            continue  # inside the last fold, or its line walked already
        done = line
        breaks = _narrow_fold(view, line, starts)
        if len(breaks) >= _NARROW_MIN:
            out += breaks
            done = breaks[-1][1]
    return out


def _narrow_fold(view: str, line: int, starts: Collection[int] = ()) -> list[tuple[int, int]]:
    """From a line's start: the breaks of the narrow fold it starts, if any. A later line
    that starts at a keyword (`starts`) is another item of a list, not the token's rest."""
    nl = view.find("\n", line, line + _NARROW_WIDTH + 3)
    if nl == -1 or view.startswith(view[line : line + 4], nl + 1):
        return []  # a longer line, or a list whose lines start alike (see below)
    first = _NARROW_LINE.match(view, line)
    if first is None or len(first.group(1)) < 2:
        return []  # (one character a line is spelled out: dumps.py)
    width, breaks, pos = len(first.group(1)), [first.span(2)], first.end()
    # A line that starts as the first one does is an item of a list (`ghp_abcd` lines, a
    # column of `AKIA...`), not a token's rest: a token's later lines start at random.
    head = view[line : line + min(width, 4)]
    while len(breaks) < _NARROW_LINES:
        if view.startswith(head, pos) or pos in starts:
            return breaks[:-1]
        m = _NARROW_LINE.match(view, pos)
        if m is not None and len(m.group(1)) == width:
            breaks.append(m.span(2))
            pos = m.end()
            continue
        if m is not None and len(m.group(1)) < width:
            return breaks  # the last line, with a break of its own
        # The last line: a run of at most `width` token characters, then no break (a
        # quote, a blank, the end); none, or a longer one, and the last break ended it.
        run = pos
        while run < len(view) and view[run] in _FOLD_CHARS and run - pos <= width:
            run += 1
        return breaks if 0 < run - pos <= width else breaks[:-1]
    return breaks


def _folds(view: str, regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Folds in the lines the windows touch. Every line is tried on its own (one anchored
    match each), so a decoy keyword on an earlier line, merged into the same window, hides
    nothing."""
    out: list[tuple[int, int]] = []
    reach: dict[int, int] = {}  # line start: the furthest a window over it reaches
    for start, end in regions:
        line = view.rfind("\n", 0, start) + 1
        while line < end:
            reach[line] = max(reach.get(line, 0), end)
            nl = view.find("\n", line, end)
            if nl == -1:
                break
            line = nl + 1
    # A walk that went on into a line, reaching as far, already did what a walk from that
    # line would: a block of folded lines is walked once, not once from each of its lines.
    walked: dict[int, int] = {}
    for line, end in sorted(reach.items()):
        if walked.get(line) == end:
            continue
        # A folded token starts on a line that is all token (or ends in a continuation).
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
                break  # the fold, if any, ends here
            line = nl + 1
            walked[line] = end
            nl = view.find("\n", line, end)
    return out


def split_findings(
    view: str,
    regions: Sequence[tuple[int, int]],
    scan: Scan,
    depth: int,
    triggers: Collection[str] | None = None,
    heads: Sequence[int] = (),
    plain: Iterable[Finding] = (),
    leads: Collection[int] = (),
    narrow: Sequence[int] = (),
) -> list[Finding]:
    """Findings that only exist once the hidden separators are taken out. Only the text
    around each group of cuts is rebuilt and scanned again, not the whole string. A token
    found whole in `view` as it is (`plain`) before a break after other text is grown over
    it only into what can be its rest (_rest_of_token: `TOKEN=...` then `NAME=...`, a
    column of `key  value` lines: the next line's first word is none). `leads`: where a
    vendor prefix that starts its token (detectors.distinctive_prefix) starts: a line
    that starts with one is no token's rest."""
    if depth == PLAIN_ONLY:
        return []
    found: list[Finding] = []
    plain = list(plain)
    # A high-tier finding ending a line is a vendor token found whole (a generic one may
    # be its first part: `API_KEY = 'gsk_...` cut anywhere).
    high_ends = {f.end for f in plain if f.tier is Tier.HIGH} if heads else set()
    pending, tails = cuts(view, regions, triggers, heads, high_ends, narrow)
    whole = {(f.start, f.rule_id) for f in plain} if tails else set()
    at, count = 0, len(pending)  # (an index: popping the list's head was quadratic)
    while at < count:
        group = [pending[at]]
        at += 1
        while at < count and pending[at][0] - group[-1][1] < REACH:
            group.append(pending[at])
            at += 1
        tailed = any(start in tails for start, _ in group)
        reach = TAIL_SCAN if tailed else REACH
        lo, hi = max(0, group[0][0] - reach), min(len(view), group[-1][1] + reach)
        # Where a fold after other text is, the group's last line break may join the
        # token's last line to the next line of text (`ghp_...` wrapped, then `next
        # line`): a token that ends at a fixed length is no token with more after it. So
        # it is read without that one too, by the detectors alone (cutting that break
        # again would branch at every level).
        tries = [group]
        if tailed and len(group) > 1 and "\n" in view[slice(*group[-1])]:
            tries.append(group[:-1])
        # Around a fold after other text, only what the detectors and decoding find: a
        # turned or lookalike reading of the joined lines (depth 0's) would grow a token
        # the text as sent holds only turned into the next line's word (`tuc_...` then
        # `done`, rot13), unchecked against what the text as sent holds.
        first = max(depth, 1) if tailed else depth
        for level, cut in zip((first, PLAIN_ONLY), tries, strict=False):
            text, out_starts, in_starts = _rebuilt(view, cut, lo, hi)
            # Where a cut ends at a vendor prefix, sorted: looked up per finding by
            # bisection (a scan over the group's cuts per finding was quadratic).
            led = sorted(b for _, b in cut if b in leads) if leads else []
            for f in scan(text, level):
                start = to_view(f.start, out_starts, in_starts)
                end = to_view(f.end - 1, out_starts, in_starts) + 1
                if end - start == f.end - f.start:
                    continue  # it spans no separator: found as it is
                if led and (i := bisect.bisect_right(led, start)) < len(led) and led[i] < end:
                    # Run into the next line's vendor prefix: that line starts a token of
                    # its own (a block of `ghp_...` lines), not this one's rest.
                    continue
                if (start, f.rule_id) in whole and not _rest_of_token(view, start, end, tails):
                    continue  # grown into the next line's first word (`NAME=`, `key:`)
                found.append(Finding(start, end, f.kind, f.rule_id, f.tier))
    return found


def _rest_of_token(view: str, start: int, end: int, tails: set[int]) -> bool:
    """Whether a finding at `start` grown to `end` over a fold after other text holds only
    the rest of its token on its last line: a whole run of that line, no assignment
    (`NAME=`; `OTHER_NAME=value` is in the alphabet of tokens with `=` padding) and no
    word (a column of `vault token lookup`'s names, YAML's next key): a digit, or cases
    mixed."""
    if not any(start < t < end for t in tails):
        return True  # grown over no such fold (lines all token)
    last = _LAST_LINE.fullmatch(view, view.rfind("\n", start, end) + 1, end)
    return (
        last is not None
        and _WORD.fullmatch(last[1]) is None
        and (end == len(view) or view[end] not in _RUN_GOES_ON)
    )


def _rebuilt(
    view: str, group: list[tuple[int, int]], lo: int, hi: int
) -> tuple[str, list[int], list[int]]:
    """`view[lo:hi]` with the spans of `group` taken out, and where each kept part starts
    in it and in `view`."""
    parts, out_starts, in_starts, pos, size = [], [], [], lo, 0
    for start, end in group:
        start = max(start, pos)
        out_starts.append(size)
        in_starts.append(pos)
        parts.append(view[pos:start])
        size += start - pos
        pos = max(pos, end)
    out_starts.append(size)
    in_starts.append(pos)
    parts.append(view[pos:hi])
    return "".join(parts), out_starts, in_starts


def to_view(offset: int, out_starts: list[int], in_starts: list[int]) -> int:
    i = bisect.bisect_right(out_starts, offset) - 1
    return in_starts[i] + offset - out_starts[i]


def base64_runs(view: str, raw: bytes | None = None) -> Iterator[tuple[int, int]]:
    """Spans of base64 runs of 40+ characters, found by C-speed byte operations (a regex
    over every character would cost more than all the detectors together). `raw`: the
    view's UTF-8, lower-cased or not (the base64 alphabet has both cases)."""
    if raw is None:
        raw = view.encode("utf-8", "surrogatepass")
    data = raw.translate(_B64_TABLE)
    ascii_only = len(data) == len(view)
    byte_at = char_at = 0  # where the last run started (a character boundary: ASCII)
    pos = data.find(_RUN)
    while pos != -1:
        end = data.find(b" ", pos)
        end = len(data) if end == -1 else end
        start, stop = pos, end
        if not ascii_only:  # byte offsets to character offsets, counted from the last run
            char_at += len(raw[byte_at:pos].decode("utf-8", "surrogatepass"))
            byte_at = pos
            start, stop = char_at, char_at + end - pos
        for _ in range(2):  # padding
            if stop < len(view) and view[stop] == "=":
                stop += 1
        yield start, stop
        pos = data.find(_RUN, end)


def base64_findings(
    view: str, scan: Scan, depth: int, runs: Iterable[tuple[int, int]]
) -> list[Finding]:
    """A base64 or hex run (a hex dump's lines taken as one) whose decoded text holds a
    secret is that secret: the whole run is the finding, with the inner finding's kind,
    id and tier. Hex is tried first (its alphabet is inside base64's). `runs`: the
    view's base64_runs."""
    if depth >= LAYERS:
        return []
    found = []
    budget = Budget(INFLATE_PER_STRING)  # what the string's compressed runs may inflate to
    # The last hex dump read: where it ends, and whether it was text. Its lines are read
    # with it, never as a dump's start again (10,000 digests are joined once, not per line).
    dump_end, dump_text = 0, False
    # No cap on how many runs or how long: junk runs first, or a secret after a megabyte
    # of padding, would walk past one. The string's time budget bounds the work instead.
    for start, end in runs:
        text: str | None = None
        if start < dump_end and dump_text:
            continue  # a line of a dump found as text (or held unread): read with it
        try:
            if start < dump_end:
                pass  # a line of a dump of no text: read as base64 on its own
            elif (block := hex_block(view, start, end, budget)) is not None:
                dump_end, text = block
                dump_text = text is not None
                if dump_text:
                    end = dump_end  # the whole dump is the finding
            elif end - start in WRAPS and (wrapped := _wrapped_base64(view, start, end)):
                # `base64` (76 columns), PEM (64), `openssl base64` (64): a line decodes to
                # a part of what the block holds (a compressed stream cut short, a token cut).
                block_end, joined = wrapped
                try:
                    text = _wrapped_text(joined, budget)
                except Unreadable as exc:
                    raise Unreadable(block_end) from exc  # the whole block is held
                if text is not None:
                    dump_end, dump_text, end = block_end, True, block_end
            if text is None:
                text = decode(view[start:end], budget)  # as base64
        except Unreadable as exc:
            end = exc.end or end
            found.append(unscreened(start, end))
            dump_end, dump_text = end, True
            continue
        inner = scan(text, depth + 1) if text is not None else []
        if not inner and (spelled := base32_text(view[start:end])) is not None:
            inner = scan(spelled, depth + 1)  # `base32`, `basenc --base32hex`
        if inner:
            found.append(run_finding(start, end, inner))
    return found


_B32 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_B32HEX = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUV")
_B32_TO_HEXED = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789abcdefghijklmnopqrstuv"
)


def base32_text(run: str) -> str | None:
    """The text a base32 run (either alphabet, upper case) encodes, read from its first
    character; None when the run is not one (hex, lower case) or holds no text."""
    body = run.rstrip("=")
    # A lower-case letter rules it out at C speed: most runs are base64 or hex (~700 per
    # 2 MB of tool output, a set of each cost ~7% of the scan).
    if not body.isupper():
        return None
    chars = set(body)
    if not chars.isdisjoint("abcdefghijklmnopqrstuvwxyz+/-_") or not chars - set(_HEX_DIGITS):
        return None
    for alphabet, hexed in ((_B32, False), (_B32HEX, True)):
        if chars <= alphabet:
            n = len(body) * 5 // 8
            value = int(body if hexed else body.translate(_B32_TO_HEXED), 32)
            data = (value >> (len(body) * 5 - n * 8)).to_bytes(n, "big")
            if (text := as_text(data)) is not None:
                return text
    return None


def _wrapped_text(joined: str, budget: Budget) -> str | None:
    """What a wrapped block holds read whole: text, or compressed data inflated; None for
    anything else (lines of tokens that only look wrapped are read one by one)."""
    try:
        data = binascii.a2b_base64(joined.encode("ascii"), strict_mode=True)
    except (binascii.Error, ValueError):
        return None
    if data[:1] in _SIGNATURE_STARTS and magic_at(data[:_HEAD]) == 0:
        return payload(data, budget)
    if data.isascii() and data.translate(_TEXT_TABLE).count(97) >= PRINTABLE * len(data):
        return data.decode("ascii")
    return None


def _wrapped_base64(view: str, start: int, end: int) -> tuple[int, str] | None:
    """A base64 block (standard alphabet) wrapped at the width of its first line: where it
    ends and its lines joined; None when no line continues it. A line with padding ends
    the block; a block of full lines only may be followed by a short line that is not its
    own (a word): it is left out when the block only decodes without it."""
    if _B64_STANDARD.fullmatch(view, start, end) is None:
        return None
    try:  # its first line: text, or the start of compressed data (else read line by line)
        head = binascii.a2b_base64(view[start:end].encode("ascii"))
    except (binascii.Error, ValueError):
        return None
    if not (head.isascii() or head[:1] in _SIGNATURE_STARTS):
        return None
    width, parts, ends = end - start, [view[start:end]], [end]
    while not parts[-1].endswith("=") and (line := _B64_LINE.match(view, ends[-1])):
        part = line.group(1)
        if len(part) > width:
            break
        parts.append(part)
        ends.append(line.end())
        if len(part) < width:
            break
    if len(parts) > 2 and sum(map(len, parts)) % 4 and not sum(map(len, parts[:-1])) % 4:
        parts.pop()
        ends.pop()
    return (ends[-1], "".join(parts)) if len(parts) > 1 else None


def hex_block(
    view: str, start: int, end: int, budget: Budget | None = None
) -> tuple[int, str | None] | None:
    """Where a hex run ends, with the lines that continue it (a dump wrapped at the run's
    width: `xxd -p` at 60 characters, `fold -w N`), and the text it encodes (None for no
    text: a digest, a key id); None when the run is not hex. The run is one of
    base64_runs (no white space, which fromhex would pass over)."""
    run = view[start:end]
    if run.strip(_HEX_DIGITS):  # not hex, told without fromhex's exception (1 us here)
        return None
    try:
        data = bytes.fromhex(run)
    except ValueError:  # an odd number of digits
        return None
    width, parts = end - start, [data]
    # The next line: after a newline (in the unescaped view a JSON `\\n` is " \n").
    while (line := _HEX_LINE.match(view, end)) is not None:
        digits = line.group(1)
        if len(digits) > width or len(digits) % 2:
            break  # not this dump's
        parts.append(bytes.fromhex(digits))
        end = line.end()
        if len(digits) < width:  # the dump's last line
            break
    try:
        return end, payload(b"".join(parts) if len(parts) > 1 else data, budget)
    except Unreadable as exc:
        raise Unreadable(end) from exc


def decode(run: str, budget: Budget | None = None) -> str | None:
    """The text a base64 (or base64url) run encodes; for binary data (an image, a key, or
    a secret behind a few bytes of junk) its printable stretches; None when it has none."""
    url = "-" in run or "_" in run
    if url and ("+" in run or "/" in run):
        return None
    body = run.rstrip("=")
    try:  # what b64decode(..., validate=True) does, without its Python layers
        raw = (body + "=" * (-len(body) % 4)).encode("ascii")
        data = binascii.a2b_base64(raw.translate(_URL_SAFE) if url else raw, strict_mode=True)
    except (binascii.Error, ValueError):
        return None
    return payload(data, budget)


class Unreadable(Exception):
    """Compressed data that inflates past the string's bound, or fails to inflate: what it
    holds cannot be screened (fail closed: the run is held, never passed). `end`: where
    the run ends, when the reader knows better than its caller (a dump's lines)."""

    def __init__(self, end: int | None = None) -> None:
        super().__init__("compressed data gate cannot inflate within its bound")
        self.end = end


def payload(data: bytes, budget: Budget | None) -> str | None:
    """Decoded bytes as text (as_text); compressed data (`gzip | base64`, `tar cz | xxd
    -p`: a signature at its start) inflated first, within `budget` (None: not); raises
    Unreadable when it cannot be. Only the first byte is looked at before that (a
    compressor's output starts with its signature): a digest or an image is let go after
    one set lookup."""
    if budget is not None and data[:1] in _SIGNATURE_STARTS and magic_at(data[:_HEAD]) == 0:
        try:
            return as_text(inflate(data, budget))
        except Exception as exc:  # past the budget, or a stream no inflater reads
            raise Unreadable from exc
    return as_text(data)


def run_finding(start: int, end: int, inner: Sequence[Finding]) -> Finding:
    """A run whose decoded text holds findings is the best of them (high tier first, then
    the longest), over the whole run."""
    best = min(inner, key=lambda f: (f.tier != "high", f.start - f.end))
    return Finding(start, end, best.kind, best.rule_id, best.tier)


def unscreened(start: int, end: int) -> Finding:
    return Finding(start, end, UNSCREENED_KIND, UNSCREENED_ID, Tier.HIGH)


def as_text(data: bytes) -> str | None:
    """Decoded bytes as text: all of it when it is text, else its printable stretches."""
    # Half its bytes zero, or more: what wide text of ASCII characters looks like.
    if data.count(0) * 2 >= PRINTABLE * len(data) and (wide := _wide(data)) is not None:
        return wide
    marked = data.translate(_TEXT_TABLE)  # printable bytes to "a": runs found by find()
    if data.isascii():  # the common case, counted at C speed
        if data and marked.count(97) >= PRINTABLE * len(data):
            return data.decode("ascii")
    elif not data.translate(None, _IN_UTF8):  # else it holds a byte no UTF-8 has: a digest
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            text = ""
        if text and (
            text.isprintable()
            or sum(c.isprintable() or c in "\n\r\t" for c in text) >= PRINTABLE * len(text)
        ):
            return text
    runs, pos = [], marked.find(_TEXT_RUN)
    while pos != -1:
        end = marked.find(b" ", pos)
        end = len(data) if end == -1 else end
        runs.append(data[pos:end])
        pos = marked.find(_TEXT_RUN, end)
    return b"\n".join(runs).decode("ascii") if runs else None


# Wide encodings: (codec, bytes per character, where a zero byte sits beside an ASCII
# character, the byte order mark). UTF-32 first: its zeros also look like UTF-16's.
_WIDE = (
    ("utf-32-le", 4, 2, b"\xff\xfe\0\0"),
    ("utf-32-be", 4, 1, b"\0\0\xfe\xff"),
    ("utf-16-le", 2, 1, b"\xff\xfe"),
    ("utf-16-be", 2, 0, b"\xfe\xff"),
)


def _wide(data: bytes) -> str | None:
    """UTF-16 or UTF-32 text (`iconv -t utf-16`, PowerShell's `Out-File`, Python's
    `.encode("utf-16")`) read as the text it is: ASCII in it leaves zero bytes beside
    every character, which the printable-stretch reading would cut into single letters."""
    for codec, width, zero, bom in _WIDE:
        body = data.removeprefix(bom)
        body = body[: len(body) - len(body) % width]
        beside = body[zero::width]
        if len(body) < 4 * width or beside.count(0) < PRINTABLE * len(beside):
            continue
        try:
            text = body.decode(codec)
        except UnicodeDecodeError:
            continue
        if sum(c.isprintable() or c in "\n\r\t" for c in text) >= PRINTABLE * len(text):
            return text
    return None
