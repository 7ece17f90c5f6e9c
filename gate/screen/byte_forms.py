"""The letter-and-digit forms a denied base64 value's bytes are printed in.

A key file's line or a `.env` signing key is base64 of bytes; a command that decodes it
prints those bytes in some other notation: hex (either way round), byte codes in decimal
or octal, base32, base64 again from another offset, base85. Each notation's letters and
digits, lower-cased, are a form the denied index finds by its middle (gate/screen/
skeleton.py), whatever separates or wraps them; one that encodes several bytes at a time,
at each of its alignments. (Words of several bytes, `od -x`'s, are read back from their
layout instead: gate/screen/dumps.py; a form for each word size, order and alignment
would make the index ten times the size.)
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator

HEAD = 16  # characters a form is found by (a form must be longer)
MIN_BYTES = 9  # decoded bytes whose forms are looked for (their hex is longer than HEAD)
# A longer value is no key file's line nor a key (a whole blob in one .env line is read
# as base64 of text or of compressed data elsewhere): its forms would cost the index
# megabytes and pure-Python base32 of them, to be found only by their middle.
MAX_ENCODED = 4096
# A value that may be base64 (or base64url) of bytes: a key file's line, a signing key.
_BASE64 = re.compile(r"[A-Za-z0-9+/]{12,}={0,2}|[A-Za-z0-9_-]{12,}={0,2}")
URLSAFE = str.maketrans("-_", "+/")  # base64url to standard base64
_URLSAFE_ONLY = frozenset("-_")
HEX = frozenset("0123456789abcdefABCDEF")
_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_OTHER = bytes(c for c in range(256) if not (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122))


def byte_forms(unit: str) -> Iterator[str]:
    """If `unit` is base64, the letter-and-digit forms of the bytes it decodes to, lower-
    cased. A line of a key file sits at some offset of the file's base64: a PEM file's
    64-character lines all start a quantum, an OpenSSH key's 70-character ones every other
    one half-way in (any even width does one or the other), so the line is decoded from
    its start and from its third character; the wrong one gives bytes nobody prints.
    Found by their middle, like every encoded form (the bytes of keys of one kind begin
    alike)."""
    if len(unit) > MAX_ENCODED or not _BASE64.fullmatch(unit) or HEX.issuperset(unit):
        return  # (a hex value is found by its own hex and byte forms: skeleton.forms)
    body = unit.rstrip("=").translate(URLSAFE)
    # Base64 again at the value's own alignment is the value's own letters: found as they
    # are written (a word-like value as written only), never as a form of its bytes.
    own = _bones(unit.encode())
    for k in (0, 2):
        # A last quantum cut short (a padded value, or a line that goes on in the next)
        # still gives its first bytes whole.
        part = body[k : len(body) - (1 if (len(body) - k) % 4 == 1 else 0)]
        if len(part) * 3 // 4 < MIN_BYTES:
            continue
        raw = base64.b64decode(part + "=" * (-len(part) % 4))
        forms = _printed(raw) if _URLSAFE_ONLY.isdisjoint(unit) else _common(raw)
        yield from dict.fromkeys(f for f in forms if len(f) > HEAD and f not in own)


def _common(raw: bytes) -> Iterator[str]:
    """The forms of any value's bytes: the ones an API token written in base64url's
    alphabet (`sk_live_...`, made to be used as text) has too."""
    hexed = raw.hex()
    yield hexed  # `xxd -p`, `od -An -tx1`, `.hex(':')`, `hex(int.from_bytes(b, 'big'))`
    yield hexed[::-1]  # `xxd -p | rev`
    yield "".join(str(b) for b in raw)  # `od -tu1`, `list(b)`
    for j in range(5):  # base32 (`base64 -d | base32`) at each alignment, without the
        enc = base64.b32encode(b"\0" * j + raw).decode().lower()  # edge characters that
        yield enc[-(-8 * j // 5) : len(enc) - 8]  # depend on the neighbouring bytes


def _printed(raw: bytes) -> Iterator[str]:
    """The forms of standard base64's bytes (a key file's line, a `.env` key): `raw` is a
    piece of some longer run of bytes."""
    yield from _common(raw)
    yield raw[::-1].hex()  # `hex(int.from_bytes(b, 'little'))`
    yield "".join(str(256 - b if b > 127 else b) for b in raw)  # `od -td1` (no sign)
    yield "".join(f"{b:03o}" for b in raw)  # `od -b`, octal escapes
    # Encodings of several bytes at a time, at each alignment (whole groups: no edge
    # character depends on a neighbouring byte).
    for j in range(3):  # base64 again from another offset (`tail -c +5 | base64`)
        yield _bones(base64.b64encode(raw[j : j + (len(raw) - j) // 3 * 3]))
    for j in range(4):  # base85 (`b85encode`, `basenc --z85`: the same letters) and ascii85
        group = raw[j : j + (len(raw) - j) // 4 * 4]
        yield _bones(base64.b85encode(group))
        yield _bones(base64.a85encode(group))


def _bones(data: bytes) -> str:
    """Letters and digits, lower-cased."""
    return data.translate(_LOWER, _OTHER).decode()
