"""What a raw line or block must hold for any screen to find something in it.

A store's lines are tested as bytes, before they are parsed, so a line none of the screens
could match is never decoded or parsed. The test is conservative: it says "no" only when
neither the secret scanner nor the denied-file index can match any string the line
decodes to, read as JSON or as plain text. The scanner finds something only where
  - one of its keywords occurs (ASCII case folded) in the string's unescaped view,
  - an invisible character (or its `\\u` escape) could hide one, or
  - a base64 run of 40 or more characters could wrap one (or be a WIF key or a Solana
    keypair: the finders with no keyword, gate/screen/wallets.py), or
  - a long enough stretch of lower-case words and list punctuation could be a seed phrase
    or a keypair's numbers (the other keyword-free finders),
and the denied-file index only where one of its forms occurs, or a random-looking value's
letters and digits do. Each is checked on the raw bytes in a form that keeps every such
occurrence, whatever JSON escapes the writer used.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

import ahocorasick_rs

from gate.screen import hidden, wallets

# An ASCII character written as a \u escape, or an escaped slash: the raw bytes do not
# show what the string holds, so the line is always screened.
_HIDING = re.compile(rb"\\u00[2-7][0-9a-fA-F]|\\/")
# The invisible characters the scanner cuts out, as UTF-8 and as escape text (lowered).
_INVISIBLE = [c.encode() for c in hidden._INVISIBLE_CHARS] + [
    f"u{ord(c):04x}".encode() for c in hidden._INVISIBLE_CHARS
]
_B64_TABLE = bytes(ord("a") if c in hidden._B64_CHARS else ord(" ") for c in range(256))
_B64_RUN = b"a" * 40
HEAD = 2048  # keyword-dense lines match early: the head is tried first
# Characters a JSON writer may not write as themselves (besides \u00XX and \/, which
# _HIDING catches): a denied form is looked for by its longest stretch without them.
_ESCAPABLE = re.compile(r'["\\\x00-\x1f\x80-\U0010ffff]+')
MIN_PIECE = 4  # a shorter stretch would match nearly every line: screen them all
# The seed-phrase finders' class of characters (wallets.TEXT_CLASS) widened by what a JSON
# writer puts for one of them or between them: a backslash and the letters and digits of
# its escapes (`\n`, `\u2192` for a Read tool's arrow), and any byte of a multi-byte
# character (the arrow written as itself).
_PHRASE_TABLE = bytes(
    ord("a") if wallets.TEXT_CLASS[c] == ord("a") or c == ord("\\") or c >= 0x80 else ord(" ")
    for c in range(256)
)


class Prefilter:
    """`maybe(raw)` is False only when no screen can match anything `raw` decodes to."""

    def __init__(
        self,
        keywords: Iterable[str],
        denied_forms: Iterable[str] = (),
        denied_letters: Callable[[bytes], bool] | None = None,
        phrases: bool = False,
    ):
        """`denied_letters`: whether the denied-file index could find a value by its letters
        and digits in what the bytes decode to (gate/screen/skeleton.py); `phrases`: the
        scanner has keyword-free finders (seed phrases, keypairs) that read any text."""
        self._phrases = phrases
        words = sorted({w.lower() for w in keywords})
        self._keywords = _matcher([w.encode() for w in words] + _INVISIBLE)
        # In a JSON string `\\"` is a quote, but read as plain text the scanner's view
        # turns each backslash into a space: keywords holding a space or a quote are
        # looked for in that reading too.
        self._spaced = _matcher([w.encode() for w in words if " " in w or '"' in w])
        pieces = {max(_ESCAPABLE.split(f), key=len) for f in denied_forms}
        self._every = any(len(p) < MIN_PIECE for p in pieces)
        self._denied = _matcher([p.encode() for p in pieces]) if not self._every else None
        self._letters = denied_letters

    def maybe(self, raw: bytes) -> bool:
        # Saying yes is always safe: a keyword anywhere in the head, as it is written
        # (keyword-dense lines, the most, are settled here at little cost).
        if _any(self._keywords, raw[:HEAD].lower()):
            return True
        if self._every or _HIDING.search(raw):
            return True
        low = raw.lower()
        if b"\\" in low:
            # JSON reading: an escaped backslash is one character (the scanner's view
            # makes it a space), an escaped quote a quote; other escapes are one
            # character no keyword holds.
            if _any(self._keywords, low.replace(b"\\\\", b" ").replace(b'\\"', b'"')):
                return True
            if _any(self._spaced, low.replace(b"\\", b" ")):
                return True
        elif len(low) > HEAD and _any(self._keywords, low):
            return True
        if raw.translate(_B64_TABLE).find(_B64_RUN) != -1:
            return True
        if self._phrases and low.translate(_PHRASE_TABLE).find(wallets.TEXT_RUN) != -1:
            return True
        if self._letters is not None and self._letters(raw):
            return True
        return self._denied is not None and _any(self._denied, raw)


def _matcher(words: list[bytes]) -> ahocorasick_rs.BytesAhoCorasick | None:
    words = [w for w in words if w]
    return ahocorasick_rs.BytesAhoCorasick(words) if words else None


def _any(ac: ahocorasick_rs.BytesAhoCorasick | None, data: bytes) -> bool:
    return ac is not None and bool(ac.find_matches_as_indexes(data))
