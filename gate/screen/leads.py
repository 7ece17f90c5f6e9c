"""Detectors whose every match begins at one of their keywords, searched only there.

A detector's regex runs over windows around its keywords' hits. Scanning a window means
trying the regex at every position in it, which for a pattern with no literal start (a
lookbehind, a case-insensitive word) costs about a hundred times a literal search. When
the pattern itself shows that each match starts with one of the keywords, no more than
`before` characters in, only the `before + 1` positions before each hit can start one,
and those are tried in one call (`lead`). What proves it is read from the parsed pattern:
every way its first characters can go has a keyword at an offset of `before` or less.
The result is the same list of matches `finditer` finds in the windows (see
`Detector.find`); a pattern the analysis cannot read keeps the window scan.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import cache
from re import _constants as C  # type: ignore[attr-defined]
from re import _parser  # type: ignore[attr-defined]
from typing import Any, cast

_MAX_PATHS = 512  # ways a pattern's start can go, past which it is not analysed
# Characters read over all paths, past which it is not analysed either: a wide `before`
# over a pattern that is not led (Azure SAS, 900) was half a second of a first request;
# the led patterns take at most about a thousand.
_MAX_STEPS = 5_000
# A keyword's character stands for itself in either case, so a class holding more than a
# few letters can stand for anything here; a small one ([pousr]) is a branch per letter.
_SMALL = 8
_ZERO_WIDTH = (C.AT, C.ASSERT, C.ASSERT_NOT)
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT)
_FLAGS = re.compile(r"(?:\(\?[aiLmsux]+\))+")

Chars = frozenset[str] | None  # None: any character
# How far a match's start has been read: its length so far and the keywords that may be
# under way, each as (offset it started at, index of the keyword).
Path = tuple[int, frozenset[tuple[int, int]]]


class _Unread(Exception):
    """A construct the analysis does not follow (a backreference, a conditional)."""


@cache
def lead(
    pattern: re.Pattern[str], keywords: tuple[str, ...], before: int
) -> re.Pattern[str] | bool:
    """For a pattern whose matches all begin at a keyword: True when that keyword is
    always at offset 0 (match at the hit), else a regex whose `match(view, lo, end)` ends
    where the first match starting in [lo, lo + before] starts. False when the analysis
    cannot show it (the window is scanned)."""
    if not led(pattern, keywords, before):
        return False
    if before == 0:
        return True
    flags = _FLAGS.match(pattern.pattern)
    head = flags.group() if flags else ""
    body = pattern.pattern[len(head) :]
    newline = "\n" if pattern.flags & re.VERBOSE else ""  # a trailing # comment ends here
    return re.compile(f"{head}(?s:.){{0,{before}}}?(?=(?:{body}{newline}))", pattern.flags)


def led(pattern: re.Pattern[str], keywords: Sequence[str], before: int) -> bool:
    """Whether every match of `pattern` has one of `keywords` (ASCII case folded) starting
    at most `before` characters after the match does."""
    allowed = [tuple(frozenset({c, c.upper()}) for c in k) for k in keywords]
    try:
        parsed = _parser.parse(pattern.pattern, pattern.flags)
        paths = _Walk(allowed, before).seq(parsed.data, parsed.state.flags, {(0, frozenset())})
    except (_Unread, RecursionError, re.error):
        return False
    return paths == {_DONE}


_DONE: Path = (-1, frozenset())  # stands for every path that already holds a keyword


class _Walk:
    """The character classes every match can start with, as a set of paths, each followed
    until it holds a keyword (then it is `_DONE`). Zero-width assertions are passed over
    (they only narrow what matches), so the paths cover every match. A path that can no
    longer hold a keyword within `before` ends the walk: the pattern is not led."""

    def __init__(self, allowed: list[tuple[frozenset[str], ...]], before: int):
        self.allowed = allowed
        self.before = before
        self.steps = 0

    def seq(self, items: list[tuple[object, object]], flags: int, paths: set[Path]) -> set[Path]:
        for op, av in items:
            if paths == {_DONE}:
                break
            paths = self.item(op, av, flags, paths)
            if len(paths) > _MAX_PATHS:
                raise _Unread
        return paths

    def item(self, op: object, av: object, flags: int, paths: set[Path]) -> set[Path]:
        if op in _ZERO_WIDTH:
            return paths
        if op is C.LITERAL:
            return self.extend(paths, _literal(av, flags))  # type: ignore[arg-type]
        if op in (C.NOT_LITERAL, C.ANY):
            return self.extend(paths, None)
        out: set[Path] = set()
        if op is C.IN:
            groups = _klass(av, flags)  # type: ignore[arg-type]
            for chars in [None] if groups is None else groups:
                out |= self.extend(paths, chars)
            return out
        if op is C.SUBPATTERN:
            _, add, remove, sub = cast(tuple[Any, int, int, Any], av)
            return self.seq(sub.data, (flags | add) & ~remove, paths)
        if op is C.ATOMIC_GROUP:
            return self.seq(av.data, flags, paths)  # type: ignore[attr-defined]
        if op is C.BRANCH:
            for alt in av[1]:  # type: ignore[index]
                out |= self.seq(alt.data, flags, paths)
            return out
        if op in _REPEATS:
            return self.repeat(av, flags, paths)  # type: ignore[arg-type]
        raise _Unread

    def repeat(
        self, av: tuple[int, int, _parser.SubPattern], flags: int, paths: set[Path]
    ) -> set[Path]:
        low, high, sub = av
        if sub.getwidth()[0] == 0:
            raise _Unread  # a repeat that may consume nothing
        for _ in range(low):
            paths = self.seq(sub.data, flags, paths)
            if paths == {_DONE}:
                return paths
        out = set(paths)
        count = low
        while count < high and paths - {_DONE}:
            paths = self.seq(sub.data, flags, paths - {_DONE})
            out |= paths
            count += 1
            if len(out) > _MAX_PATHS:
                raise _Unread
        return out

    def extend(self, paths: set[Path], chars: Chars) -> set[Path]:
        return {p if p is _DONE else self.step(p, chars) for p in paths}

    def step(self, path: Path, chars: Chars) -> Path:
        """`path` read one character further: `_DONE` once a keyword is whole in it; raises
        when no keyword can be, past `before`."""
        self.steps += 1
        if self.steps > _MAX_STEPS:
            raise _Unread
        length, going = path
        if chars is None:
            going = frozenset()
        else:
            going = frozenset((o, w) for o, w in going if chars <= self.allowed[w][length - o])
            if length <= self.before:
                going |= {(length, w) for w, word in enumerate(self.allowed) if chars <= word[0]}
        length += 1
        if any(length - o == len(self.allowed[w]) for o, w in going):
            return _DONE
        if not going and length > self.before:
            raise _Unread
        return length, going


def _literal(code: int, flags: int) -> frozenset[str]:
    # Under IGNORECASE a letter also matches its other ASCII case. (Python also folds
    # U+212A KELVIN SIGN to k and U+017F LONG S to s; the keyword prefilter never sees those
    # as the keyword, so a match spelled with them was never found reliably either.)
    c = chr(code)
    return frozenset({c, c.lower(), c.upper()}) if flags & re.IGNORECASE else frozenset(c)


def _klass(items: list[tuple[object, object]], flags: int) -> list[frozenset[str]] | None:
    """A small class as one set per character it stands for (with its other case under
    IGNORECASE); None for a large one or a category (\\d, \\w, \\s, a negation)."""
    codes: set[int] = set()
    for op, av in items:
        if op is C.LITERAL:
            codes.add(av)  # type: ignore[arg-type]
        elif op is C.RANGE:
            low, high = cast(tuple[int, int], av)
            if high - low >= _SMALL:
                return None
            codes.update(range(low, high + 1))
        else:
            return None
        if len(codes) > _SMALL:
            return None
    return list({_literal(code, flags) for code in codes})
