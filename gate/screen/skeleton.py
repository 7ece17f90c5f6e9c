"""Denied values found in a string's letters and digits, lower-cased: one pass for every
form, exact or not.

A random-looking value (`sk_live_...`, a generated password) printed with a character
between each of its own (`sed 's/./&#/g'`, `fold -w8`, `' '.join(v)`, `"ab" + "cd"`), in
another case (`swapcase`, title case), as hex pairs or byte codes with separators
(`.hex(' ')`, `od -An -tx1`, `od -tu1`), as base64 wrapped at any width, or cut in
pieces sent apart (`cut -c1-16`, then `cut -c17-`) keeps its letters and digits in order.
So the string's letters and digits are searched for such values' letters and digits (any
PIECE + 1 of them in a row), and for the letters and digits of their hex, decimal and
base64 forms. Ordinary text joined up does not make a run like them; a word-like value
would be made so, and is found only as written.

Every other form (a word-like value, an escaped one) is searched for the same way, by its
letters and digits, and kept only where the text holds it exactly as written: one pass
over a string finds both kinds.
"""

from __future__ import annotations

import base64
import bisect
import itertools
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import ahocorasick_rs

from gate.screen.byte_forms import HEAD, HEX, URLSAFE, byte_forms

PIECE = 12  # letters and digits in a row that identify a random-looking value
STRIDE = 2  # its pieces start every STRIDE characters: any PIECE + 1 in a row hold one
MAX_VALUE = 200  # longer values (a certificate's lines, say) are found as written only
MIN_EXACT = 6  # a form with fewer letters and digits is searched for as written
# Tokens that begin alike however random the rest: base64 of JSON (a JWT's header), of DER
# (a key's ASN.1 header) or of SSH's wire format. Their pieces would match other tokens
# of the same kind, so they are found whole only.
_SHARED_STARTS = ("eyJ", "MII", "MIG", "MC", "AAAA")

_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_OTHER = bytes(c for c in range(256) if not (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122))
_ALNUM = re.compile(rb"[0-9A-Za-z]")
_JSON_ESCAPE = re.compile(rb"\\(?:u[0-9a-fA-F]{4}|.)")
_STANDARD_BASE64 = re.compile(r"[A-Za-z0-9+/]+={0,2}")
_PRINTABLE = bytes(range(32, 127)) + b"\t\n\r"
_BLOCK = 4096  # bytes per step of the map from letters and digits back to the text


def bones(text: str) -> str:
    """A text's letters and digits (ASCII), lower-cased."""
    return text.encode("utf-8", "surrogatepass").translate(_LOWER, _OTHER).decode()


def _turns(s: str) -> int:
    """How often `s` turns in a way words do not: between a letter and a digit, from an
    upper-case letter to another, and to an upper-case letter that starts no word (one
    not followed by a lower-case letter, as in camelCase)."""
    return sum(
        a.isdigit() != b.isdigit()
        or (b.isupper() and (a.isupper() or not s[i + 2 : i + 3].islower()))
        for i, (a, b) in enumerate(itertools.pairwise(s))
    )


def random_looking(chars: str) -> bool:
    """Letters and digits (as written) that ordinary text does not make: many different
    characters, digits among letters, turning often (`HelloWorld2024Project` does not).
    Hex has only 16 characters to differ by: 8 different are many (10 missed one random
    24-digit hex value in 140, which was then found only as written)."""
    many = 8 if HEX.issuperset(chars) else 10
    return (
        len(set(chars.lower())) >= min(len(chars) // 2 + 2, many)
        and not chars.isalpha()
        and not chars.isdigit()
        and _turns(chars) >= 3
    )


def _piece(chars: str, of_bytes: bool) -> bool:
    """Whether PIECE letters and digits of a random-looking value identify it: not all
    digits, nor letters that could be a word (all one case, or capitalised words), unless
    the value is base64 of random bytes (`of_bytes`): a key file's line spells no words,
    whatever its letters look like (`bRrrAffgyMit` is one piece in a hundred of them)."""
    return not chars.isdigit() and (of_bytes or not (chars.isalpha() and _turns(chars) < 2))


def _begins_alike(unit: str) -> bool:
    """Whether `unit` starts as every token of its kind does (_SHARED_STARTS), read from
    the bytes its start decodes to: a JSON object's first key, DER's SEQUENCE then its
    version INTEGER, SSH's length-prefixed name. A key file's middle line that happens to
    start `MC` or `eyJ` (one in 4,000 lines) goes on with random bytes: its pieces count."""
    if not unit.startswith(_SHARED_STARTS):
        return False
    try:
        head = base64.b64decode(unit[:12].translate(URLSAFE), validate=True)
    except ValueError:
        return True  # no base64 of its kind: read by its start only, as before
    if head.startswith(b'{"'):
        return not head[2:].translate(None, _PRINTABLE)
    if head.startswith(b"0"):  # 0x30: a DER SEQUENCE
        return b"\x02\x01" in head[1:6]
    return head.startswith(b"\0\0\0") and not head[4:8].translate(None, _PRINTABLE)


def of_random_bytes(unit: str) -> bool:
    """Whether `unit` is standard base64 (a key file's line, a signing key) of random
    bytes: written as random characters are (a turn, in _turns' sense, at one pair in four
    or more: random base64 turns at one in two, `CorrectHorseBatteryStaple` at none, and
    any run of letters decodes to bytes), and decoding to bytes that are no text (a
    quarter or more outside printable ASCII; random bytes: 63%)."""
    if len(unit) < 24 or not _STANDARD_BASE64.fullmatch(unit):
        return False
    chars = unit.encode().translate(None, _OTHER).decode()
    if _turns(chars) * 4 < len(chars):
        return False
    body = unit.rstrip("=")
    # A line of a file's base64 starts a quantum or half-way into one: read either way,
    # random bytes are no text; base64 of text is text one of the two ways.
    for k in (0, 2):
        raw = base64.b64decode(body[k : len(body) - (len(body) - k) % 4])
        if len(raw.translate(None, _PRINTABLE)) * 4 < len(raw):
            return False
    return True


def forms(unit: str, of_bytes: bool) -> Iterator[tuple[str, bool]]:
    """The letter-and-digit forms of a random-looking value, lower-cased, each with whether
    any piece of it counts (its own letters and digits: a value cut in two) or only all of
    it (an encoded form). For a value that does not look random, only the forms of the
    bytes it decodes to if it is base64. `of_bytes`: the value is base64 of random bytes
    (of_random_bytes), random whatever its letters (one key line in 4,000 holds no digit)."""
    # A base64 value's bytes look random whatever its characters do (a key file's line
    # may hold no digit): their forms are looked for either way.
    for form in byte_forms(unit):
        yield form, False
    chars = unit.encode().translate(None, _OTHER).decode()
    if not PIECE <= len(chars) <= MAX_VALUE or not (of_bytes or random_looking(chars)):
        return
    # Pieces only of one token: a URL's or an address's would be words (`example.com/v1`).
    token = not _begins_alike(unit) and not any(c in unit for c in " \t@:")
    yield chars.lower(), token
    raw = unit.encode()
    yield raw.hex(), False  # `.hex(' ')`, `od -An -tx1`, `xxd -p -c4`
    yield raw.hex()[::-1], False  # `xxd -p | rev`
    yield "".join(str(b) for b in raw), False  # `od -An -tu1`, `[ord(c) for c in v]`
    for k in range(3):  # base64 wrapped at any width (`base64 -w8`), each alignment
        enc = base64.b64encode(b"\0" * k + raw).decode()
        yield bones(enc[(4 * k + 2) // 3 + (1 if k else 0) : len(enc) - 4]), False


@dataclass(frozen=True, slots=True)
class _Exact:
    form: bytes  # as written, UTF-8
    lead: int  # its bytes before its first letter or digit
    word: bool  # found only as a whole word
    owner: int


@dataclass(frozen=True, slots=True)
class _Token:
    form: str  # letters and digits, lower-cased
    at: int  # where the pattern starts in it
    owner: int


class Matcher:
    """Finds exact forms (each with its owner's number) and the random-looking units'
    letter-and-digit forms in one pass over a string's letters and digits."""

    def __init__(self, exact: Sequence[tuple[str, bool, int]], units: Sequence[tuple[str, int]]):
        """`exact`: (form, whether only as a whole word, owner); `units`: (value, owner)."""
        patterns: dict[str, int] = {}
        self._exact: list[list[_Exact]] = []
        # Every form a key starts or centres: forms of two values may share one (an
        # OpenSSH key holds its public key twice, at two offsets of its base64).
        self._tokens: list[list[_Token]] = []
        plain: list[tuple[str, bool, int]] = []  # too few letters and digits: as written

        def slot(key: str) -> int:
            if (i := patterns.get(key)) is None:
                i = patterns[key] = len(self._exact)
                self._exact.append([])
                self._tokens.append([])
            return i

        covered: set[str] = set()  # letter-and-digit forms read case-blind already
        for unit, owner in units:
            cased = unit.encode().translate(None, _OTHER).decode()
            loose = of_random_bytes(unit)
            for form, pieces in forms(unit, loose):
                covered.add(form)
                if not pieces:
                    # Found by its middle: tokens of one kind begin alike (the hex of
                    # `sk_live_`, a JWT's header), so a start would match the others.
                    at = max(0, (len(form) - HEAD) // 2)
                    self._tokens[slot(form[at : at + HEAD])].append(_Token(form, at, owner))
                    continue
                last = len(form) - PIECE
                for at in dict.fromkeys((*range(0, last, STRIDE), last)):
                    if _piece(cased[at : at + PIECE], loose):
                        i = slot(form[at : at + PIECE])
                        self._tokens[i].append(_Token(form, at, owner))
        for form, word, owner in exact:
            key = bones(form)
            if len(key) < MIN_EXACT:
                plain.append((form, word, owner))
                continue
            if key in covered:  # found whatever its case and separators
                continue
            data = form.encode("utf-8", "surrogatepass")
            lead = len(data) - len(data.lstrip(_OTHER))
            self._exact[slot(key[:HEAD])].append(_Exact(data, lead, word, owner))
        self._ac = (
            ahocorasick_rs.BytesAhoCorasick([p.encode() for p in patterns]) if patterns else None
        )
        # Rare (a value mostly of punctuation): searched for as written.
        self._plain = plain
        self._plain_ac = ahocorasick_rs.AhoCorasick([f for f, _, _ in plain]) if plain else None

    def find(self, text: str, whole_words: bool = True) -> list[tuple[int, int, int]]:
        """Where the forms are in `text`, as (start, end, owner); a random-looking unit's
        letters and digits with anything between them, in any case, grown over as much of
        the form as the text holds."""
        out = []
        if self._ac is not None:
            raw = text.encode("utf-8", "surrogatepass")
            skel = raw.translate(_LOWER, _OTHER)
            found = self._ac.find_matches_as_indexes(skel, overlapping=True)
            if found:
                out = self._spans(text, raw, skel, found, whole_words)
        if self._plain_ac is not None:
            for i, s, e in self._plain_ac.find_matches_as_indexes(text, overlapping=True):
                _, word, owner = self._plain[i]
                if not (whole_words and word and inside_word(text, s, e)):
                    out.append((s, e, owner))
        return out

    def could_hold(self, raw: bytes) -> bool:
        """Whether any string `raw` decodes to (as JSON, or as it is) could hold a form: a
        test on bytes, before they are parsed (`gate history`'s prefilter). Saying yes is
        always safe."""
        if self._plain_ac is not None or self._ac is None:
            return self._plain_ac is not None
        readings = [raw]
        if b"\\" in raw:  # a JSON escape stands for a character that is no letter of the
            readings.append(_JSON_ESCAPE.sub(b" ", raw))  # string (ASCII ones: see there)
        return any(self._ac.find_matches_as_indexes(r.translate(_LOWER, _OTHER)) for r in readings)

    def _spans(
        self,
        text: str,
        raw: bytes,
        skel: bytes,
        found: list[tuple[int, int, int]],
        whole_words: bool,
    ) -> list[tuple[int, int, int]]:
        where = _Places(raw)
        spans: list[tuple[int, int, int, bool]] = []  # in bytes of raw; whole words only?
        for i, s, e in found:
            if tokens := self._tokens[i]:
                for token in tokens:
                    a, b = _grown(skel, s, e, token.form, token.at)
                    spans.append((where.at(a), where.at(b - 1) + 1, token.owner, False))
                continue
            for exact in self._exact[i]:
                start = where.at(s) - exact.lead
                if start >= 0 and raw.startswith(exact.form, start):
                    spans.append((start, start + len(exact.form), exact.owner, exact.word))
        out = []
        for start, end, owner, word in spans:
            if len(raw) != len(text):  # byte offsets to character offsets
                start, end = (len(raw[:x].decode("utf-8", "surrogatepass")) for x in (start, end))
            if not (whole_words and word and inside_word(text, start, end)):
                out.append((start, end, owner))
        return out


def inside_word(text: str, start: int, end: int) -> bool:
    return (start > 0 and text[start - 1].isalnum()) or (end < len(text) and text[end].isalnum())


class _Places:
    """Where the k-th letter or digit of a text's UTF-8 is, found a block at a time (only
    strings that hold a match pay for it)."""

    def __init__(self, raw: bytes) -> None:
        self._raw = raw
        self._starts: list[int] = []  # letters and digits before each block
        count = 0
        for b in range(0, len(raw), _BLOCK):
            self._starts.append(count)
            count += len(raw[b : b + _BLOCK].translate(None, _OTHER))

    def at(self, k: int) -> int:
        block = bisect.bisect_right(self._starts, k) - 1
        base = block * _BLOCK
        left = k - self._starts[block]
        for m in _ALNUM.finditer(self._raw, base, base + _BLOCK):
            if not left:
                return m.start()
            left -= 1
        raise IndexError(k)


def _grown(skel: bytes, s: int, e: int, form: str, at: int) -> tuple[int, int]:
    """A match of `form[at:...]` at skel[s:e] widened to all of the form the text holds."""
    while s > 0 and at > 0 and skel[s - 1] == ord(form[at - 1]):
        s, at = s - 1, at - 1
    tail = at + (e - s)
    while e < len(skel) and tail < len(form) and skel[e] == ord(form[tail]):
        e, tail = e + 1, tail + 1
    return s, e
