"""Runs of digits that may spell bytes no form of them is found in: dumps of words of
several bytes (`od -An -x`, `-tx8`, `-o`, `-tu4`, `hexdump`, `xxd -e`, from any offset),
bits (`xxd -b`, `basenc --base2msbf` or `--base2lsbf`, `format(b, '08b')` joined) and a
decimal integer (`int.from_bytes(b, 'big')` or `'little'`).

A word's bytes are printed in the machine's order (turned, little-endian here), sixteen
bits are two bytes, and every decimal digit of a big integer depends on all of its bytes:
so each such run is read back into the bytes it could be, and the denied index looks for
a value's bytes in their hex. Finding the runs costs one byte translation and three
C-speed searches per string.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from gate.screen import dumps

MIN_BITS = 64  # a run of fewer bits is too short to hold a value's bytes
MIN_DIGITS = 40  # a decimal integer of fewer digits holds less than 17 bytes
# A longer integer is no key (a denied file's bytes as one number past 40 KB): converting
# it costs more than its screening is worth, and Python refuses to print one that long
# without being told to.
MAX_DIGITS = 100_000
_CHUNK = 4000  # digits converted at once (Python's limit for int() is 4,300)
MOST = 10_000  # runs read in one string

# Hex digits (decimal ones and bits among them) and a sign as "h", white space and commas
# kept, anything else ".": a dump of words holds two cells of four or more digits in a
# row; a long integer or a run of bits is forty digits in a row.
_SHAPE = bytes(
    ord("h") if chr(c) in "0123456789abcdefABCDEF-" else c if c in b" \t\r\n," else ord(".")
    for c in range(256)
)
# (Decimal words are right-aligned: two spaces before a shorter one, `od -td8`.)
_CELLS = (b"hhhh hhhh", b"hhhh  hhhh")
_LONG = b"h" * MIN_DIGITS
_RUN = re.compile(rb"h+")
# Bits, eight a byte, separated (a space, a comma, a line end) or not, wrapped anywhere.
_BITS = re.compile(rb"[01]{8}(?:(?:, ?| |\r?\n)?[01])*")
_BIT_SEPARATORS = b" \r\n,"


def readings(text: str) -> Iterator[tuple[int, int, list[bytes]]]:
    """Each run of `text` that could spell bytes, as (start, end, the bytes it could be),
    start and end in characters of `text`."""
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) != len(text):  # offsets of `raw` are offsets of `text` only for ASCII
        raw = text.encode("ascii", "replace")
    shape = raw.translate(_SHAPE)
    lines: dict[int, None] = {}  # where lines holding cells start
    for cells in _CELLS:
        at, done = shape.find(cells), 0
        while at != -1 and len(lines) < MOST:
            line = raw.rfind(b"\n", 0, at) + 1
            lines[line] = None
            if line >= done and (bits := _bit_run(raw, line)) is not None:
                yield bits  # bits a byte a cell (`' '.join(format(b, '08b') ...)`)
                done = bits[1]
            nl = shape.find(b"\n", max(at, done))
            at = -1 if nl == -1 else shape.find(cells, nl)
    if lines:
        for start, end, data in dumps.around(text, sorted(lines)):
            yield start, end, [data]
    at, runs = shape.find(_LONG), 0
    while at != -1 and runs < MOST:
        end = _RUN.match(shape, at).end()  # type: ignore[union-attr]  # (at least _LONG)
        run = raw[at:end]
        if run.isdigit():
            if (bits := _bit_run(raw, at)) is not None:
                end = bits[1]
                yield bits
            elif end - at <= MAX_DIGITS:
                n = _integer(run.decode())
                data = n.to_bytes((n.bit_length() + 7) // 8, "big")
                yield at, end, [data, data[::-1]]
        at, runs = shape.find(_LONG, end), runs + 1


def _bit_run(raw: bytes, at: int) -> tuple[int, int, list[bytes]] | None:
    """Bits from `at`, most or least significant first, read from each of the eight bit
    offsets (a run cut anywhere); None if there are too few there."""
    m = _BITS.match(raw, at)
    if m is None or raw[m.end() : m.end() + 1].isalnum():
        return None
    bits = m.group(0).translate(None, _BIT_SEPARATORS).decode()
    if len(bits) < MIN_BITS:
        return None
    out = []
    for shift in range(8):
        usable = bits[shift : shift + (len(bits) - shift) // 8 * 8]
        size = len(usable) // 8
        out.append(int(usable, 2).to_bytes(size, "big"))
        # Least significant first: the whole run turned round is the bytes, last first,
        # each most significant first.
        out.append(int(usable[::-1], 2).to_bytes(size, "big")[::-1])
    return at, m.end(), out


def _integer(digits: str) -> int:
    """The integer `digits` spell, halves converted apart past Python's limit."""
    if len(digits) <= _CHUNK:
        return int(digits)
    low = len(digits) // 2
    scale: int = 10**low
    return _integer(digits[:-low]) * scale + _integer(digits[-low:])
