"""Bytes printed one by one: the dumps of `xxd`, `hexdump`, `od` (with their offsets,
groups and character columns), hex pairs separated by spaces, commas or colons (`od -An`,
a Node `<Buffer ...>`), and characters spelled out: one per line (`fold -w1`, `sed
's/./&\\n/g'`), separated by spaces, or a list of one-character strings. No detector and
no denied value is found in them as printed; read back, they are the text they spell.

`spans(view)` yields each such run as (start, end, bytes it spells); a screen scans those
bytes and withholds the whole run when they hold a secret or a denied value. Finding the
runs costs two byte translations and a few C-speed searches per string: a run is only
parsed where its shape is seen (`_TRIGGERS`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterator

import ahocorasick_rs

from gate.screen.detectors import Finding
from gate.screen.hidden import (
    INFLATE_PER_STRING,
    LAYERS,
    Scan,
    Unreadable,
    payload,
    run_finding,
    unscreened,
)
from gate.screen.unpack import SIGNATURES, Budget

MIN_BYTES = 8  # shorter runs cannot hold a value gate looks for
# A string shorter than this cannot hold a run long enough to be read.
MIN_VIEW = 2 * MIN_BYTES

# What a run holds, found by a literal search (the secret scanner's keyword pass carries
# them; lower case): a dump's first offset; a newline, `=` or `_` as hex pairs (text from
# a .env, or a name); od -c's cells of `=` or `_`; an `=` or `_` spelled out; a list of one-
# character strings or of byte values holding a newline, `=` or `_`.
_MARKS = ("0a", "3d", "5f", "2d")  # newline, =, _, - in hex
_OFFSETS = ("000000",)
_BIT_MARKS = tuple(f"{int(h, 16):08b}" for h in _MARKS)  # the same bytes as eight bits
_PAIRS = tuple(
    f"{a}{h}{b}" for h in _MARKS for a, b in ((" ", " "), (" ", "\n"), (":", ":"), (",", ","))
)
_OD_CELLS_AT = ("   =   ", "   _   ", "   -   ")
# (` = ` is left out: code holds it everywhere, `x = 1`; a line spelled out with spaces is
# found by its `_` or `-`, as names and most tokens hold one.)
# Characters joined by one other (`','.join(v)`, `sed 's/./&-/g'`, `'.'.join(v)`) or by a
# comma and a space: the token's `_`, `-` or `=` between two of them.
# Two spaces and a space before a line break: one character a line, or each behind a
# backslash, as a JSON-escaped string shows them in the view (`\\n` and `\\\\` read so).
_JOINERS = (
    *(",", ", ", ".", ":", ";", "|", "/", "\\", "-", "*", "+", "#", "\t"),
    *("  ", " \n", " \t", "\r\n", " \r \n"),  # and CRLF, as the view shows them escaped
)
_SPELLED = (
    " _ ",
    " - ",
    "\n=\n",
    "\n_\n",
    "\n-\n",
    *(f"{sep}{mark}{sep}" for sep in _JOINERS for mark in "_-="),
)
_LISTS = ("', '", '", "', "','", '","')
_CODES = re.compile(r"(?<![\w.])(?:[0-9]{1,3}, ?){11,}[0-9]{1,3}(?![\w.])")
_CODES_AT = tuple(f",{s}{n},{s}" for n in (10, 61, 95, 45) for s in ("", " "))
# One escape per byte (or character): %XX, \xXX, \uXXXX, octal \ooo, HTML &#NN; and
# &#xHH;, 0xHH in a list. (pattern, its triggers: the escape of a newline, =, _ or -)
_ESCAPE_RUNS = (
    (re.compile(r"(?:%[0-9A-Fa-f]{2}){8,}"), tuple(f"%{h}" for h in _MARKS)),
    (re.compile(r"(?:\\x[0-9A-Fa-f]{2}){8,}"), tuple(f"\\x{h}" for h in _MARKS)),
    (re.compile(r"(?:\\u00[0-9A-Fa-f]{2}){8,}"), tuple(f"\\u00{h}" for h in _MARKS)),
    (re.compile(r"(?:\\[0-3][0-7]{2}){8,}"), ("\\012", "\\075", "\\137", "\\055")),
    (
        re.compile(r"(?:&#(?:[xX][0-9A-Fa-f]{1,2}|[0-9]{1,3});){8,}"),
        ("&#10;", "&#61;", "&#95;", "&#45;", *(f"&#x{h};" for h in _MARKS)),
    ),
    # also over lines (`xxd -i`: twelve a line, indented), quoted (`[hex(b) ...]`), and
    # separated by a blank or a line break alone (`printf '0x%02x '`)
    (
        re.compile(
            r"(?P<q>['\"]?)0[xX][0-9A-Fa-f]{1,2}(?P=q)"
            r"(?:(?:,[ \t]*\r?\n?[ \t]*|[ \t]|\r?\n)(?P=q)0[xX][0-9A-Fa-f]{1,2}(?P=q)){7,}"
        ),
        # Compressed bytes hold no mark: a compression signature's first two bytes instead.
        (
            *(f"0x{h}" for h in _MARKS),
            *(", ".join(f"0x{b:02x}" for b in s[:2]) for s in SIGNATURES),
        ),
    ),
    # Bits, eight a byte, most significant first: separated (`format(b, '08b')` joined by
    # spaces or commas, one per line) or not (`basenc --base2msbf`, wrapped anywhere).
    (
        re.compile(r"(?<![0-9A-Za-z])[01]{8}(?:(?:, ?| |\r?\n)[01]{8}){7,}(?![0-9A-Za-z])"),
        _BIT_MARKS,
    ),
    (
        re.compile(r"(?<![0-9A-Za-z])[01]{64,}(?:\r?\n[01]+)*(?![0-9A-Za-z])"),
        _BIT_MARKS,
    ),
)
_ESCAPES_AT = tuple(t for _, ts in _ESCAPE_RUNS for t in ts)
_ESCAPE_DIGITS = re.compile(
    r"%([0-9A-Fa-f]{2})|\\x([0-9A-Fa-f]{2})|\\u([0-9A-Fa-f]{4})|0[xX]([0-9A-Fa-f]{1,2})"
)
TRIGGERS = tuple(
    dict.fromkeys((*_OFFSETS, *_PAIRS, *_OD_CELLS_AT, *_SPELLED, *_LISTS, *_CODES_AT, *_ESCAPES_AT))
)
_FINDER = ahocorasick_rs.BytesAhoCorasick(
    [t.encode() for t in TRIGGERS], implementation=ahocorasick_rs.Implementation.DFA
)

# A dump's line: an offset (hex or octal, `xxd`'s followed by a colon) or none, then cells.
_OFFSET = re.compile(r"[0-9a-fA-F]{6,16}:?(?= |$)")
_HEXDUMP_C = re.compile(r"((?:[0-9a-fA-F]{2} {1,2}){1,32}) *\|.{0,32}\| ?$")
_CELLS = {  # cell width: bytes a cell holds, read as (base, little-endian)
    2: (1, 16),
    4: (2, 16),
    8: (4, 16),
    16: (8, 16),
    3: (1, 8),
    6: (2, 8),
    11: (4, 8),
    22: (8, 8),
}
# Decimal cells are not padded with zeros but right-aligned in a field as wide as the
# longest value (`od -tu2`: 6 columns, `-td4`: 12; `hexdump -d`: 8): bytes a cell holds,
# by field width.
_FIELDS = {4: 1, 5: 1, 6: 2, 7: 2, 8: 2, 11: 4, 12: 4, 21: 8}
_FIELD = re.compile(r" +-?[0-9]+")
_BITS = re.compile(r"[01]{8}")
_OCTAL = re.compile(r"[0-3][0-7]{2}")
_OD_ESCAPES = {"\\0": 0, "\\a": 7, "\\b": 8, "\\t": 9, "\\n": 10, "\\v": 11, "\\f": 12, "\\r": 13}
_SPACED_HEX = re.compile(
    r"(?<![0-9A-Za-z])[0-9a-fA-F]{2}(?:[ ,:][0-9a-fA-F]{2}){7,}(?![0-9A-Za-z])"
)
# Each begins with a literal quote, which the regex engine searches for at C speed. Every
# match holds `q,q` or `q, q` (its first separator): a list's pattern is only run where
# one of those triggers is (JSON's `", "` is everywhere; Python's `', '` is not).
_CHAR_LISTS = {
    q: re.compile(f"{q}(?:[^{q}\\\\\\n]|\\\\.){q}(?:, ?{q}(?:[^{q}\\\\\\n]|\\\\.){q}){{7,}}")
    for q in ("'", '"')
}
_LIST_SEPARATORS = {q: (f"{q},{q}", f"{q}, {q}") for q in _CHAR_LISTS}  # all in _LISTS
_LIST_ITEM = re.compile(r"""['"]((?:[^'"\\]|\\.|(?<=")'|(?<=')"))['"]""")
_LIST_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "0": "\0", "'": "'", '"': '"', "\\": "\\"}


def spans(
    view: str, raw: bytes | None = None, present: Collection[str] | None = None
) -> Iterator[tuple[int, int, bytes]]:
    """Runs of `view` that spell bytes, as (start, end, the bytes), in order, never
    overlapping. `raw`: the view's UTF-8, lower-cased or not; `present`: which TRIGGERS
    it holds, if known (a run is only looked for where its trigger is)."""
    if len(view) < MIN_VIEW:
        return
    if raw is None:
        raw = view.encode("utf-8", "surrogatepass")
    if present is None:
        # Non-overlapping matches (the overlapping search costs three times as much): a
        # trigger inside another's match is looked for on its own (`   =   ` holds ` = `).
        hits = _FINDER.find_matches_as_indexes(raw.lower())
        present = {TRIGGERS[i] for i, _, _ in hits}
        if present.intersection(_SPELLED):
            present |= {t for t in _OD_CELLS_AT if t in view}
    if not present:
        return
    found: list[tuple[int, int, bytes]] = []
    text = view if len(raw) == len(view) else raw.decode("ascii", "replace")
    marks = [t for t in (*_OFFSETS, *_PAIRS) if t in present]
    lowered = text.lower() if marks else ""  # only for a dump's triggers
    starts = sorted({text.rfind("\n", 0, pos) + 1 for t in marks for pos in _positions(lowered, t)})
    if starts:
        found += _dumps(view, raw, text, starts)
    if any(t in present for t in _SPELLED):
        found += _spelled(view, present)
    if any(t in present for t in _OD_CELLS_AT):
        found += _od_columns(view, raw)
    if quotes := [q for q, seps in _LIST_SEPARATORS.items() if any(t in present for t in seps)]:
        found += _char_lists(view, quotes)
    if any(t in present for t in _CODES_AT):
        found += _code_lists(view)
    for pattern, triggers in _ESCAPE_RUNS:
        if any(t in present for t in triggers):
            found += _escape_runs(view, pattern)
    last = 0
    for start, end, data in sorted(found, key=lambda s: (s[0], -s[1])):
        if start >= last and len(data) >= MIN_BYTES:
            yield start, end, data
            last = end


def around(view: str, positions: Collection[int]) -> list[tuple[int, int, bytes]]:
    """The dump blocks (and spaced hex runs) on the lines of `positions`, as `spans` gives
    them but found from where something was seen rather than from a trigger: a dump of
    binary bytes from any offset (`xxd -s 300`) holds none of the triggers."""
    raw = view.encode("utf-8", "surrogatepass")
    text = view if len(raw) == len(view) else raw.decode("ascii", "replace")
    starts = sorted({text.rfind("\n", 0, pos) + 1 for pos in positions})
    return [r for r in _dumps(view, raw, text, starts) if len(r[2]) >= MIN_BYTES]


def _positions(text: str, needle: str, most: int = 10_000) -> Iterator[int]:
    pos = text.find(needle)
    while pos != -1 and most:
        yield pos
        most -= 1
        pos = text.find(needle, pos + 1)


def _line_start(data: bytes, pos: int) -> int:
    return data.rfind(b"\n", 0, pos) + 1


def _chars(raw: bytes, view: str, byte_pos: int) -> int:
    """A byte offset of `raw` as a character offset of `view`."""
    if len(raw) == len(view):
        return byte_pos
    return len(raw[:byte_pos].decode("utf-8", "surrogatepass"))


def _dumps(view: str, raw: bytes, text: str, starts: list[int]) -> list[tuple[int, int, bytes]]:
    """Dump blocks (consecutive lines of one format) around the lines a trigger is on, and
    spaced hex runs inside such lines that are no dump's."""
    out: list[tuple[int, int, bytes]] = []
    done = 0  # where the last block ended
    for line in starts:
        if line < done:
            continue
        end = _line_end(text, line)
        kind, data = _dump_line(text[line:end].rstrip("\r"), "")
        if not kind:
            out += _spaced_hex(text, raw, view, line, end)
            done = end
            continue
        first = line  # earlier lines of the same dump, without a trigger of their own
        while first > done:
            prev = text.rfind("\n", 0, first - 1) + 1
            k, d = _dump_line(text[prev : first - 1].rstrip("\r"), "")
            if k != kind:
                break
            first, data = prev, d + data
        p = end + 1
        while p < len(text):
            e = _line_end(text, p)
            k, d = _dump_line(text[p:e].rstrip("\r"), kind)
            if k not in (kind, "end"):
                break
            p = e + 1
            if k == "end":
                break
            data += d
        done = min(p, len(text))
        out.append(_span(raw, view, first, done, data))
    return out


def _line_end(text: str, pos: int) -> int:
    nl = text.find("\n", pos)
    return len(text) if nl == -1 else nl


def _span(raw: bytes, view: str, start: int, end: int, data: bytes) -> tuple[int, int, bytes]:
    s, e = _chars(raw, view, start), _chars(raw, view, end)
    while e > s and view[e - 1] in "\r\n":
        e -= 1
    return s, e, data


def _dump_line(line: str, kind: str) -> tuple[str, bytes]:
    """A dump line's format and the bytes it shows: ("", b"") for none; ("end", b"") for
    the line that closes a dump (its length as an offset alone, or `*` for lines
    repeated)."""
    stripped = line.strip()
    if kind and stripped == "*":
        return kind, b""
    if kind and _OFFSET.fullmatch(stripped) and ":" not in stripped:
        return "end", b""
    m = _OFFSET.match(line)
    rest = line[m.end() :] if m else line
    if not rest.startswith(" "):
        return "", b""
    if m and m.group(0).endswith(":"):  # xxd: big-endian groups, then two spaces, then text
        area, _, column = rest[1:].partition("  ")
        groups = area.split(" ")
        if all(_BITS.fullmatch(b) for b in groups):  # xxd -b: a byte's eight bits a cell
            return "xxd-bits", bytes(int(b, 2) for b in groups)
        try:
            printed = bytes.fromhex(area)
            turned = b"".join(bytes.fromhex(g)[::-1] for g in groups)
        except ValueError:
            return "", b""
        # xxd -e: little-endian groups, told apart by the text column, which shows the
        # bytes in their order.
        if (
            turned != printed
            and _shown(turned) == column
            and (kind == "xxd-e" or _shown(printed) != column)
        ):
            return "xxd-e", turned
        return "xxd", printed
    if h := _HEXDUMP_C.fullmatch(rest.lstrip(" ")):  # hexdump -C: bytes, then |text|
        return "hexdump-c", bytes.fromhex(h.group(1))
    if rest.endswith("<") and (z := rest.rfind("  >")) != -1:  # od -t x1z: then >text<
        rest = rest[:z]
    if (data := _od_chars(rest)) is not None:
        return "od-c", data
    cells = rest.split()
    width = len(cells[0]) if cells else 0
    if width not in _CELLS or any(len(c) != width for c in cells):
        return _decimal_line(rest, len(cells))
    size, base = _CELLS[width]
    try:
        numbers = [int(c, base) for c in cells]
    except ValueError:
        return _decimal_line(rest, len(cells))  # decimal words all as wide (`-td4`)
    if any(not 0 <= n < 1 << (8 * size) for n in numbers):  # (`int` reads a sign too)
        return _decimal_line(rest, len(cells))
    # od and hexdump print words in the machine's order: little-endian here.
    return f"cells{width}", b"".join(n.to_bytes(size, "little") for n in numbers)


def _shown(data: bytes) -> str:
    """Bytes as a dump's text column shows them."""
    return data.decode("latin-1").translate(_SHOWN)


_SHOWN = {c: "." for c in (*range(32), *range(127, 256))}


def _decimal_line(rest: str, count: int) -> tuple[str, bytes]:
    """`od -tu2`, `-td4`, `hexdump -d`: decimal words in fields of one width (a last
    line padded with spaces to the others' width)."""
    rest = rest.rstrip(" ")
    if not count or len(rest) % count or (size := _FIELDS.get(len(rest) // count)) is None:
        return "", b""
    width = len(rest) // count
    out = bytearray()
    top = 1 << (8 * size)
    for i in range(0, len(rest), width):
        field = rest[i : i + width]
        if not _FIELD.fullmatch(field) or not -top // 2 <= (n := int(field)) < top:
            return "", b""
        out += (n % top).to_bytes(size, "little")  # a negative one as two's complement
    return f"decimal{width}", bytes(out)


def _od_chars(rest: str) -> bytes | None:
    """`od -c`: one character per four columns, right-aligned; escapes and octal codes."""
    if len(rest) % 4 or len(rest) < 8:
        return None
    out = bytearray()
    for i in range(0, len(rest), 4):
        cell = rest[i : i + 4]
        if cell == "    ":
            out.append(32)
        elif cell[:3] == "   " and cell[3].isascii():
            out.append(ord(cell[3]))
        elif cell[:2] == "  " and cell[2:] in _OD_ESCAPES:
            out.append(_OD_ESCAPES[cell[2:]])
        elif cell[0] == " " and _OCTAL.fullmatch(cell, 1):
            out.append(int(cell[1:], 8))
        else:
            return None
    return bytes(out)


def _spaced_hex(
    text: str, raw: bytes, view: str, start: int, end: int
) -> list[tuple[int, int, bytes]]:
    """Hex pairs separated by spaces, commas or colons in one line."""
    out = []
    for m in _SPACED_HEX.finditer(text, start, end):
        digits = re.sub(r"[^0-9a-fA-F]", "", m.group(0))
        out.append(_span(raw, view, m.start(), m.end(), bytes.fromhex(digits)))
    return out


def _spelled(view: str, present: Collection[str]) -> list[tuple[int, int, bytes]]:
    """Characters separated by single spaces, one per line or joined by another separator
    (_JOINERS: every other character, or every third after `, `, is the text), read
    outwards from each spelled `=`, `_` or `-` (a trigger). Each trigger's positions are
    walked in order, every one (no cap: a run walked is skipped whole, so the walk is
    linear; 10,000 decoys first hid a token), and runs found by two overlap: findings()
    keeps one."""
    out: list[tuple[int, int, bytes]] = []
    for trigger in _SPELLED:
        if trigger not in present:
            continue
        sep = trigger[: (len(trigger) - 1) // 2]
        width, step = len(sep), len(sep) + 1
        done = 0  # per trigger: another's runs may lie anywhere
        for pos in _positions(view, trigger, len(view)):
            if pos < done:
                continue
            i = j = pos + width  # the spelled character
            # One a line, the first and last may share their line with other text (`x =
            # g`, then `h`...): taken, as a line's last or first character.
            while i > width and view[i - width : i] == sep and view[i - step] != "\n":
                i -= step
            while j + step < len(view) and view[j + 1 : j + step] == sep and view[j + step] != "\n":
                j += step
            if (j - i) // step + 1 >= MIN_BYTES:
                chars = view[i : j + 1 : step]
                out.append((i, j + 1, chars.encode("utf-8", "surrogatepass")))
                done = j + 1
    return out


def _od_columns(view: str, raw: bytes) -> list[tuple[int, int, bytes]]:
    """`od -An -c`: four-column cells with no offsets."""
    out = []
    for m in _OD_CELLS.finditer(raw.translate(_OD_SHAPE)):
        lines = raw[m.start() : m.end()].decode("ascii", "replace").split("\n")
        cells = [_od_chars(line) for line in lines]
        if all(c is not None for c in cells):
            out.append(_span(raw, view, m.start(), m.end(), b"".join(cells)))  # type: ignore[arg-type]
    return out


# For od -An -c's cells: a backslash kept, white space kept, anything else "x".
_OD_SHAPE = bytes(c if c in b" \n\\" else ord("x") for c in range(256))
_OD_CELL = rb"(?:   x|  \\x| xxx)"
_OD_CELLS = re.compile(_OD_CELL + rb"(?:    |" + _OD_CELL + rb"|\n(?=    |" + _OD_CELL + rb"))+")


def _char_lists(view: str, quotes: list[str]) -> list[tuple[int, int, bytes]]:
    """A list of one-character strings in `quotes`, as Python or JSON print `list(text)`."""
    out = []
    for q in quotes:
        for m in _CHAR_LISTS[q].finditer(view):
            chars = [
                _LIST_ESCAPES.get(c[1], c[1]) if c.startswith("\\") else c
                for c in _LIST_ITEM.findall(m.group(0))
            ]
            out.append((m.start(), m.end(), "".join(chars).encode("utf-8", "surrogatepass")))
    return out


def findings(
    view: str,
    scan: Scan,
    depth: int,
    raw: bytes | None = None,
    present: Collection[str] | None = None,
) -> list[Finding]:
    """A run spelling text that holds a secret is that secret: the whole run is the
    finding, with the inner finding's kind, id and tier."""
    if depth >= LAYERS:
        return []
    out = []
    budget = Budget(INFLATE_PER_STRING)
    for start, end, data in spans(view, raw, present):
        try:
            text = payload(data, budget)  # a dump of compressed data inflated
        except Unreadable:
            out.append(unscreened(start, end))
            continue
        if text is not None and (inner := scan(text, depth + 1)):
            out.append(run_finding(start, end, inner))
    return out


def _code_lists(view: str) -> list[tuple[int, int, bytes]]:
    """A list of byte values, as `list(data)` or `Array.from(buffer)` print them."""
    out = []
    for m in _CODES.finditer(view):
        codes = [int(n) for n in m.group(0).replace(" ", "").split(",")]
        if max(codes) < 256:
            out.append((m.start(), m.end(), bytes(codes)))
    return out


def _escape_runs(view: str, pattern: re.Pattern[str]) -> list[tuple[int, int, bytes]]:
    """A run of escapes, one per byte or character (`_ESCAPE_RUNS`)."""
    out = []
    for m in pattern.finditer(view):
        run = m.group(0)
        if run.startswith("&#"):
            codes = [int(c[1:], 16) if c[:1] in "xX" else int(c) for c in run[2:-1].split(";&#")]
        elif not run.strip("01 ,\r\n"):  # bits; a wrapped run's line breaks taken out
            bits = "".join(run.split()).replace(",", "")
            codes = [int(bits[i : i + 8], 2) for i in range(0, len(bits) - 7, 8)]
        elif run.startswith("\\") and run[1:2].isdigit():  # octal
            codes = [int(c, 8) for c in run[1:].split("\\")]
        else:  # a NUL byte (`0x00`, `%00`) is a byte like any: compressed data holds many
            codes = [int("".join(g), 16) for g in _ESCAPE_DIGITS.findall(run)]
        if not codes:
            continue
        if run.startswith(("&#", "\\u")):  # characters, the others bytes (gzip's too)
            if max(codes) < 0x110000:
                text = "".join(map(chr, codes))
                out.append((m.start(), m.end(), text.encode("utf-8", "surrogatepass")))
        elif max(codes) < 0x100:
            out.append((m.start(), m.end(), bytes(codes)))
    return out
