"""BIP39 seed phrases: runs of 12 to 24 words of the English list whose checksum holds."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from gate.screen.wallets import Reading

# bip39_english.txt is BIP39's English wordlist as published with the standard
# (github.com/bitcoin/bips, bip-0039/english.txt; the same file ships in the `mnemonic`
# package, MIT licence, (c) Pavol Rusnak). Its SHA-256, which the standard prints:
WORDLIST_SHA256 = "2f5eed53a4727b4bf8880d8f3f199efc90e58503646d9ff8eff3a2ed3b24dbda"
LENGTHS = (24, 21, 18, 15, 12)  # words; longest first, so no part of a phrase is left

# A phrase sits in a stretch of letters and what may separate its words: blanks, commas
# and quotes (a JSON list), a list's numbers (`1. `, `2) `, a Read tool's `7→`, which the
# ASCII reading turns into `?`): wallets.TEXT_CLASS. Only stretches long enough for 12
# words are read word by word (Reading.text_stretches: 58 characters, the shortest 12 list
# words in a row a random phrase makes once in a million; 3 to 8 letters each, 5.6 on
# average).
_WORD = re.compile(r"[a-z]+")
_TWELVE = b"\1" * 12
# Between two words of a phrase: at least one blank, comma or quote, and at most one
# list number.
_GAP = re.compile(r"""[\s,"'\[\]]+(?:(?:\d{1,7}[.):]?|\d{1,7}→)[ \t]*)?""")


@cache
def wordlist() -> dict[str, int]:
    words = (Path(__file__).parent / "bip39_english.txt").read_text(encoding="ascii").split()
    return {w: i for i, w in enumerate(words)}


def spans(reading: Reading) -> Iterator[tuple[int, int]]:
    """Where seed phrases are in the text: each its first word to its last."""
    view = reading.view
    for start, end in reading.text_stretches():
        blanks = view.count(" ", start, end) + view.count("\n", start, end)
        if (
            blanks + view.count(",", start, end) >= 11
        ):  # not a digest, a path or a word in a long identifier
            yield from _in_stretch(view, start, end)


def _in_stretch(view: str, start: int, end: int) -> Iterator[tuple[int, int]]:
    index = wordlist()
    # Most stretches (log lines, hex, prose) hold no 12 list words in a row: told at C
    # speed before any word is looked at on its own.
    if _TWELVE not in bytes(map(index.__contains__, _WORD.findall(view, start, end))):
        return
    # (word index, start, end, whether a line break is before it) of list words in a row
    run: list[tuple[int, int, int, bool]] = []
    for m in _WORD.finditer(view, start, end):
        i = index.get(m.group())
        gap = _GAP.fullmatch(view, run[-1][2], m.start()) if run else None
        if run and (i is None or gap is None):
            yield from _phrases(run)
            run = []
        if i is not None:
            run.append((i, m.start(), m.end(), gap is not None and "\n" in gap.group()))
    yield from _phrases(run)


def _phrases(run: list[tuple[int, int, int, bool]]) -> Iterator[tuple[int, int]]:
    """The phrase a run of list words makes, else the phrases its lines make (several
    phrases one per line). A phrase fills its run but for one word (`seed` before it):
    the run's other parts are not tried, or a phrase with a typo, or any long run of list
    words, would hold a part whose checksum holds by chance (one in 16 for 12 words)."""
    if len(run) < LENGTHS[-1]:
        return
    found = _filling(run)
    if found is not None:
        yield found
        return
    breaks = [k for k, (_, _, _, newline) in enumerate(run) if newline]
    if not breaks or len(breaks) == len(run) - 1:
        return  # one line, or one word per line
    for a, b in zip([0, *breaks], [*breaks, len(run)], strict=True):
        if (found := _filling(run[a:b])) is not None:
            yield found


def _filling(run: list[tuple[int, int, int, bool]]) -> tuple[int, int] | None:
    for n in LENGTHS:
        for at in range(len(run) - n + 1) if 0 <= len(run) - n <= 1 else ():
            if is_phrase([w for w, _, _, _ in run[at : at + n]]):
                return run[at][1], run[at + n - 1][2]
    return None


def is_phrase(words: list[int]) -> bool:
    """Word indices that make a BIP39 phrase: 11 bits each, the last len/3 of them the
    first bits of the SHA-256 of the rest (a random run passes once in 2**(len/3)). Not
    a phrase: the list itself in order (a wordlist file) and the standard's test vectors
    and tools' well-known phrases, which repeat words (`abandon abandon ... about`,
    `test test ... junk`); a random phrase repeats three words about once in 20,000."""
    n = len(words)
    if n not in LENGTHS or len(set(words)) < n - 2:
        return False
    if all(a < b for a, b in itertools.pairwise(words)):
        return False
    bits = 0
    for w in words:
        bits = bits << 11 | w
    check_bits = n // 3
    entropy = (bits >> check_bits).to_bytes(n * 4 // 3, "big")
    return hashlib.sha256(entropy).digest()[0] >> (8 - check_bits) == bits & ((1 << check_bits) - 1)
