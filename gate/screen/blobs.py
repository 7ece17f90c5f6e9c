"""Whole files carried as encoded runs no index of values matches: base64 or hex of
compressed data (`gzip -c .env | base64`, `tar cz . | xxd -p`), and base32 of anything.

Each is decoded (a compressed one inflated within a bound) so the denied-file index can
read what it holds. Ordinary traffic pays little: a base64 run (an image, say) is decoded
only far enough to see that no compression signature starts it, and base32 runs, all
upper case without a space for 40 characters, are rare.
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass

from gate.screen.hidden import alphabet_runs, base64_runs
from gate.screen.unpack import Budget, TooLarge, inflate, magic_at

MIN_RUN = 40  # the shortest run looked at (hidden.alphabet_runs)
HEAD = 64  # characters decoded to look for a signature: junk before it up to 40 bytes
_HEX = frozenset(string.hexdigits)
_B32 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_B32HEX = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUV")
_B32_TABLE = bytes(ord("a") if chr(c) in _B32 | _B32HEX else ord(" ") for c in range(256))
_B64_LINE = re.compile(r"[A-Za-z0-9+/_-]+")
_HEX_LINE = re.compile(r"[0-9A-Fa-f]+")
_B32_LINE = re.compile(r"[A-Z0-9]+")
_NL = re.compile(r"\r?\n|\\r?\\n")  # a newline may be JSON-escaped in a tool's output
WRAPS = frozenset({60, 64, 76})  # `base64`, `base32`: 76 columns; `xxd -p`: 60; PEM: 64
_TOKEN = re.compile(r"[a-z+/_-]")  # a character base64 has and base32 has not
_SEPARATORS = re.compile(r"\s+|\\r|\\n|=+$")


@dataclass(frozen=True, slots=True)
class Blob:
    start: int
    end: int
    text: str | None  # what it decodes to; None: it inflates past the bound (withhold it)


def blobs(text: str, budget: Budget) -> Iterator[Blob]:
    """The runs of `text` that decode to something worth matching, in order."""
    done = 0
    for start, end in base64_runs(text):
        if start >= done and (blob := _compressed(text, start, end, budget)) is not None:
            done = blob.end
            yield blob
    done = 0
    for start, end in alphabet_runs(text, _B32_TABLE, padding=6):
        # Upper-case stretches of a longer base64 or word token are not base32 output.
        if start < done or (start and _TOKEN.match(text, start - 1)) or _TOKEN.match(text, end):
            continue
        done = _block(text, start, _B32_LINE, 6)
        yield from _base32(text[start:done], start, done, budget)


def _compressed(text: str, start: int, end: int, budget: Budget) -> Blob | None:
    """A base64 or hex run that holds compressed data, inflated; None if it holds none."""
    head = text[start : min(end, start + HEAD)]
    offsets: tuple[int, ...]
    if set(head) <= _HEX:
        decode, offsets, line = _unhex, (0, 1), _HEX_LINE
    else:  # junk characters before the data: each alignment
        decode, offsets, line = _unbase64, (0, 1, 2, 3), _B64_LINE
    for k in offsets:
        at = magic_at(decode(head[k:]))
        if at == -1:
            continue
        stop = _block(text, start + k, line, 2)
        data = decode(_SEPARATORS.sub("", text[start + k : stop]))[at:]
        try:
            inner = inflate(data, budget)
        except TooLarge:
            return Blob(start, stop, None)
        return Blob(start, stop, inner.decode("utf-8", "replace"))
    return None


def _block(text: str, start: int, line: re.Pattern[str], padding: int) -> int:
    """Where the run at `start` ends, with the lines that continue it if it is wrapped at a
    width tools use: each as wide as the first, but the last, which may be narrower (then
    "=" padding). A one-line run is not joined to a word on the next line."""
    m = line.match(text, start)
    end = m.end() if m else start
    width = end - start
    while width in WRAPS and (nl := _NL.match(text, end)):
        nxt = line.match(text, nl.end())
        if nxt is None or nxt.end() - nxt.start() > width:
            break
        end = nxt.end()
        if nxt.end() - nxt.start() < width:
            break
    while padding and text.startswith("=", end):
        end, padding = end + 1, padding - 1
    return end


def _base32(run: str, start: int, end: int, budget: Budget) -> Iterator[Blob]:
    """What a base32 run decodes to (either alphabet): from its first character and, when
    its length says it does not start on a group of 8, from each of the next 7."""
    compact = _SEPARATORS.sub("", run)
    chars = set(compact)
    alphabets = [hexed for hexed, alpha in ((False, _B32), (True, _B32HEX)) if chars <= alpha]
    offsets = range(1) if len(compact) % 8 == 0 else range(8)
    for hexed in alphabets:
        for k in offsets:
            data = _unbase32(compact[k:], hexed)
            at = magic_at(data[:48])
            if at != -1:
                try:
                    data = inflate(data[at:], budget)
                except TooLarge:
                    yield Blob(start, end, None)
                    return
            yield Blob(start, end, data.decode("utf-8", "replace"))


_TO_DIGITS = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789abcdefghijklmnopqrstuv")


def _unbase32(s: str, hexed: bool) -> bytes:
    """base32 (or base32hex) without padding, decoded at C speed: base32hex's alphabet is
    int()'s base 32 (the standard one is translated to it), read in linear time."""
    if not s:
        return b""
    n = len(s) * 5 // 8
    value = int(s if hexed else s.translate(_TO_DIGITS), 32)
    return (value >> (len(s) * 5 - n * 8)).to_bytes(n, "big")


def _padded(s: str) -> str:
    """`s` padded to whole groups of 4; a last character that cannot end a group is
    dropped (the bytes before it are what matter: a value near the end of a file)."""
    if len(s) % 4 == 1:
        s = s[:-1]
    return s + "=" * (-len(s) % 4)


def _unhex(s: str) -> bytes:
    s = s[: len(s) // 2 * 2]
    try:
        return bytes.fromhex(s)
    except ValueError:
        return b""


def _unbase64(s: str) -> bytes:
    altchars = b"-_" if ("-" in s or "_" in s) else None
    try:
        return base64.b64decode(_padded(s), altchars=altchars)
    except (binascii.Error, ValueError):
        return b""
