"""Whole files carried as encoded runs no index of values matches: base64 or hex of
compressed data (`gzip -c .env | base64`, `tar cz . | xxd -p`), and base32 of anything.

Each is decoded (a compressed one inflated within a bound) so the denied-file index can
read what it holds. Ordinary traffic pays little: a base64 run (an image, say) is decoded
only far enough to see that no compression signature starts it, and base32 runs, all
upper case without a space for 40 characters, are rare.
"""

from __future__ import annotations

import binascii
import re
import string
from collections.abc import Iterator
from dataclasses import dataclass

from gate.screen.hidden import WRAPS, base64_runs
from gate.screen.unpack import Budget, TooLarge, inflate, magic_at

MIN_RUN = 40  # the shortest run looked at (hidden.base64_runs)
HEAD = 64  # characters decoded to look for a signature: junk before it up to 40 bytes
TEXT_HEAD = 32  # characters decoded to tell base64 of text
MAX_TEXT = 1 << 20  # the longest run of base64 of text decoded and read
_HEX_CHARS = string.hexdigits
_B32 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567")
_B32HEX = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUV")
_B32_CHARS = string.ascii_uppercase + string.digits  # either alphabet
_B64_LINE = re.compile(r"[A-Za-z0-9+/_-]+")
_HEX_LINE = re.compile(r"[0-9A-Fa-f]+")
_B32_LINE = re.compile(r"[A-Z0-9]+")
_PRINTABLE_BYTES = bytes(range(32, 127)) + b"\t\n\r"
_NL = re.compile(r"\r?\n|\\r?\\n")  # a newline may be JSON-escaped in a tool's output


@dataclass(frozen=True, slots=True)
class Blob:
    start: int
    end: int
    text: str | None  # what it decodes to; None: it inflates past the bound (withhold it)


def blobs(text: str, budget: Budget) -> Iterator[Blob]:
    """The runs of `text` that decode to something worth matching, in order. A run is a
    stretch of base64's alphabet (hex's and base32's are in it) between other characters,
    so upper case inside a longer token is never read as base32."""
    done = 0
    for start, end in base64_runs(text):
        if start < done:
            continue
        head = text[start : min(end, start + HEAD)]
        if (
            head.strip(_HEX_CHARS)
            and not head.rstrip("=").strip(_B32_CHARS)  # a short run's head holds its padding
            and not text[start:end].rstrip("=").strip(_B32_CHARS)
        ):
            done = _block(text, start, _B32_LINE, 6)
            yield from _base32(text[start:done], start, done, budget)
        elif (
            blob := _compressed(text, start, head, budget) or _text(text, start, end)
        ) is not None:
            done = blob.end
            yield blob


def _compressed(text: str, start: int, head: str, budget: Budget) -> Blob | None:
    """A base64 or hex run (`head`: its first characters) that holds compressed data,
    inflated; None if it holds none."""
    offsets: tuple[int, ...]
    if not head.strip(_HEX_CHARS):
        decode, offsets, line, group = _unhex, (0, 1), _HEX_LINE, 2
    else:  # junk characters before the data: each alignment
        decode, offsets, line, group = _unbase64, (0, 1, 2, 3), _B64_LINE, 4
    if _continues(text, start):
        # A line of a wrapped block: another file would start on a line of its own, so
        # only a signature's encoding at the line's start counts (a string test).
        if not text.startswith(_LINE_SIGNATURES, start):
            return None
        offsets = (0,)
    for k in offsets:
        piece = head[k:]
        at = magic_at(decode(piece[: len(piece) // group * group]))
        if at == -1:
            continue
        stop = _block(text, start + k, line, 2)
        data = decode(_compact(text[start + k : stop]))[at:]
        try:
            inner = inflate(data, budget)
        except TooLarge:
            return Blob(start, stop, None)
        return Blob(start, stop, inner.decode("utf-8", "replace"))
    return None


def _text(text: str, start: int, end: int) -> Blob | None:
    """A base64 run (wrapped or not) of text, or a one-line one written backwards (`base64
    -w0 .env | rev`), decoded: the text was re-cased, spelled out or turned before it was
    encoded (`tr a-z A-Z < .env | base64`), so no encoded form of a value is in it. Only
    the first characters are decoded to tell (an image's are not text)."""
    run = text[start:end]
    if not run.strip(_HEX_CHARS) or _continues(text, start):
        return None  # hex: its forms are looked for as they are; a wrapped block's later
        # lines: the block was read from its first
    if _is_text(_unbase64(run[:TEXT_HEAD])):
        stop = _block(text, start, _B64_LINE, 2)
        if stop - start <= MAX_TEXT:
            return Blob(
                start, stop, _unbase64(_compact(text[start:stop])).decode("utf-8", "replace")
            )
    if len(run) in WRAPS or len(run) > MAX_TEXT:  # backwards: one line only
        return None
    backwards = text[start - 2 if text.startswith("==", start - 2) else start : end][::-1]
    if _is_text(_unbase64(backwards[:TEXT_HEAD])):
        first = start - (len(backwards) - len(run))
        return Blob(first, end, _unbase64(backwards.rstrip("=")).decode("utf-8", "replace"))
    return None


def _is_text(data: bytes) -> bool:
    """Printable ASCII (and line breaks) only, as a file of values is."""
    return len(data) >= 12 and not data.translate(None, _PRINTABLE_BYTES)


# How the signatures (unpack.py) start in base64 and in hex: gzip, xz, .lzma, bzip2, zstd,
# zip, then zlib (78 01, 5e, 9c, da).
_LINE_SIGNATURES = (
    *("H4sI", "/Td6", "XQAA", "Qlpo", "KLUv", "UEsD", "eA", "eF", "eJ", "eN"),
    *("1f8b", "fd37", "5d0000", "425a", "28b5", "504b", "78"),
    *("1F8B", "FD37", "5D0000", "425A", "28B5", "504B"),
)


def _continues(text: str, start: int) -> bool:
    """Whether the run at `start` is a line of a wrapped block that began above it."""
    if not text.endswith("\n", 0, start):
        return False
    prev = text.rfind("\n", 0, start - 1) + 1
    return (start - 1 - prev) in WRAPS or (start - 2 - prev) in WRAPS  # \n or \r\n


def _compact(run: str) -> str:
    """The run without its line breaks (real or JSON-escaped) and padding."""
    if "\\" in run:
        run = run.replace("\\r", "").replace("\\n", "")
    return "".join(run.split()).rstrip("=")


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
    compact = _compact(run)
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
    if "-" in s or "_" in s:  # base64url
        s = s.replace("-", "+").replace("_", "/")
    try:
        return binascii.a2b_base64(_padded(s))
    except (binascii.Error, ValueError):
        return b""
