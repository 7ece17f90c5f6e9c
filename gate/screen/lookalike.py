"""Text a reader takes for plain ASCII though its characters are not: read back as ASCII.

A model reads `ｓｋ＿ｌｉｖｅ` (fullwidth), `𝐬𝐤` (mathematical bold), `sk_lіve` (a Cyrillic
`і`), `ś` (an accent on each letter), a value with an invisible character between every
two letters (zero-width, bidi controls, variation selectors, combining marks, NUL) and
tag characters (which spell ASCII invisibly) as the value itself; no exact matcher does.
`folded()` gives the view with such characters dropped or mapped to the ASCII character
they stand for, and `origin()` maps a span of it back. Only text holding one of them pays
for the view (a regex search at C speed says which); ASCII text pays nothing.
"""

from __future__ import annotations

import functools
import re
import unicodedata

# Letters of other scripts drawn like Latin ones (Unicode's confusables for Cyrillic and
# Greek letters that have a Latin twin): a hex value or a token spelled with them reads
# the same to a person and to a model.
_TWINS = {
    "а": "a", "в": "b", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x",
    "ѕ": "s", "і": "i", "ј": "j", "ԁ": "d", "ԛ": "q", "ԝ": "w", "һ": "h", "ӏ": "l",
    "к": "k", "м": "m", "н": "h", "т": "t", "ь": "b", "г": "r", "п": "n",
    "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
    "С": "C", "Т": "T", "Х": "X", "У": "Y", "Ѕ": "S", "І": "I", "Ј": "J", "Ԁ": "D",
    "Ԛ": "Q", "Ԝ": "W", "Һ": "H", "Ӏ": "I",
    "α": "a", "ο": "o", "ν": "v", "ρ": "p", "ι": "i", "κ": "k", "τ": "t", "υ": "u",
    "χ": "x", "ε": "e",
    "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
    "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X",
}  # fmt: skip
# Where the characters to read back live: Latin-1 to Greek and Cyrillic (accents,
# combining marks, twins), the general punctuation block (zero-width and bidi controls),
# letterlike symbols, circled letters, variation selectors, halfwidth and fullwidth forms,
# mathematical alphanumerics, enclosed letters, tag characters.
_RANGES = (
    (0x00, 0x01),
    (0x80, 0x530),
    (0x1AB0, 0x1B00),
    (0x1DC0, 0x1E00),
    (0x2000, 0x2070),
    (0x20D0, 0x2100),
    (0x2100, 0x2150),
    (0x2460, 0x2500),
    (0xFE00, 0xFE30),
    (0xFEFF, 0xFF00),
    (0xFF00, 0xFFF0),
    (0x1D400, 0x1D800),
    (0x1F100, 0x1F1A0),
    (0xE0000, 0xE0080),
    (0xE0100, 0xE01F0),
)


def _table() -> dict[int, str | None]:
    out: dict[int, str | None] = {}
    for low, high in _RANGES:
        for cp in range(low, high):
            c = chr(cp)
            if cp == 0 or unicodedata.category(c) in ("Mn", "Me", "Cf"):
                out[cp] = None  # not drawn, or drawn on the letter before it
                continue
            plain = "".join(
                ch for ch in unicodedata.normalize("NFKD", c) if not unicodedata.combining(ch)
            )
            if len(plain) == 1 and plain.isascii() and plain.isprintable() and plain != " ":
                out[cp] = plain
    out.update({ord(k): v for k, v in _TWINS.items()})
    # Tag characters spell ASCII invisibly (U+E0041 is a hidden `A`), and models read them.
    out.update({0xE0000 + c: chr(c) for c in range(0x20, 0x7F)})
    return out


def _class(cps: list[int]) -> str:
    """A regex class of the code points, as ranges."""
    out, i = [], 0
    while i < len(cps):
        j = i
        while j + 1 < len(cps) and cps[j + 1] == cps[j] + 1:
            j += 1
        first, last = re.escape(chr(cps[i])), re.escape(chr(cps[j]))
        out.append(first if i == j else f"{first}-{last}")
        i = j + 1
    return "[" + "".join(out) + "]"


@functools.cache
def _tables() -> tuple[dict[int, str | None], re.Pattern[str]]:
    """The translation table and the class of its characters (searched at C speed),
    built the first time text that is not ASCII comes (`gate scan` starts without)."""
    fold = _table()
    return fold, re.compile(_class(sorted(fold)))


# Every ASCII byte but NUL: deleted from a string's UTF-8 to leave only what may fold.
_ASCII = bytes(range(1, 128))


def folded(text: str) -> str | None:
    """`text` as the ASCII it is read as, or None when it holds nothing to read back."""
    if text.isascii() and "\0" not in text:
        return None
    # Only its characters past ASCII (and NULs) are looked at: a Read tool's `→` on every
    # line made the class search walk the whole text (at C speed, but per character).
    rest = text.encode("utf-8", "surrogatepass").translate(None, _ASCII)
    fold, odd = _tables()
    if odd.search(rest.decode("utf-8", "surrogatepass")) is None:
        return None
    return text.translate(fold)


def origin(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the span [start, end) of folded(text) lies in `text` (the characters dropped
    inside it included)."""
    fold = _tables()[0]
    kept = 0
    first = last = len(text)
    for i, c in enumerate(text):
        if fold.get(ord(c), c) is None:
            continue
        if kept == start:
            first = i
        kept += 1
        if kept == end:
            last = i + 1
            break
    return first, last
