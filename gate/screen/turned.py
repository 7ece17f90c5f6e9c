"""Text turned so that no detector reads it: written backwards (`rev`, `[::-1]`), rot13-ed
(`tr A-Za-z N-ZA-Mn-za-m`) or rot47-ed, or with its letters' case swapped. The secret
scanner's keyword pass also looks for every keyword turned each way; a hit has the line
around it turned back and scanned, and what is found there is reported at its place in
the turned text."""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from gate.screen.detectors import Finding
from gate.screen.hidden import Scan

MIN_KEYWORD = 4  # shorter keywords turned would hit ordinary text
REACH = 4096  # characters of a line read on each side of a hit

_ROT13 = str.maketrans(
    string.ascii_lowercase + string.ascii_uppercase,
    string.ascii_lowercase[13:]
    + string.ascii_lowercase[:13]
    + string.ascii_uppercase[13:]
    + string.ascii_uppercase[:13],
)


# ASCII letters only: str.swapcase turns `ß` into `SS`, and offsets must hold.
_SWAPCASE = str.maketrans(
    string.ascii_lowercase + string.ascii_uppercase,
    string.ascii_uppercase + string.ascii_lowercase,
)


@dataclass(frozen=True, slots=True)
class Turn:
    name: str
    backwards: bool
    # A translation, if not written backwards (not hashed: a Turn is its name and way).
    table: dict[int, int] | None = field(default=None, compare=False)

    def apply(self, text: str) -> str:
        """`text` turned (each turn is its own inverse)."""
        return text[::-1] if self.backwards else text.translate(self.table or {})

    def back(self, start: int, end: int, length: int) -> tuple[int, int]:
        """Where a span of the turned text is in the text it was turned from."""
        return (length - end, length - start) if self.backwards else (start, end)


# rot47 (`tr '!-~' 'P-~!-O'`, CyberChef's): every printable ASCII character but the space.
_PRINTABLE = "".join(chr(c) for c in range(33, 127))
_ROT47 = str.maketrans(_PRINTABLE, _PRINTABLE[47:] + _PRINTABLE[:47])
REVERSED = Turn("reversed", backwards=True)
ROT13 = Turn("rot13", backwards=False, table=_ROT13)
ROT47 = Turn("rot47", backwards=False, table=_ROT47)
TURNS = (REVERSED, ROT13, ROT47)  # keywords turned these ways are looked for
# Letters' case swapped (`tr a-zA-Z A-Za-z`, `.swapcase()`; upper-casing a lower-case or
# hex token): the keyword pass ignores case, so its hits are the keywords' own. A vendor
# keyword written in capitals only (`GHP_`, `SK-ANT-`) that nothing was found at has its
# line read swapped (a mixed-case one, `AIza`, is a keyword as its vendor writes it: a
# Firebase web config's key, dropped as public, would be read again swapped).
SWAPCASE = Turn("swapcase", backwards=False, table=_SWAPCASE)


def swapped_hits(view: str, hits: Sequence[tuple[int, int]], found: Sequence[Finding]) -> list[int]:
    """Of vendor keywords' (start, end) hits, sorted, those whose letters are all upper
    case and that lie in no finding: where a token with its case swapped may start."""
    spans = sorted((f.start, f.end) for f in found)
    out, k = [], 0
    for start, end in hits:
        while k < len(spans) and spans[k][1] <= start:
            k += 1
        if k < len(spans) and spans[k][0] <= start:
            continue  # inside a finding
        word = view[start:end]
        if word.isupper() and word.isascii():
            out.append(start)
    return out


def findings(
    view: str, hits: Mapping[Turn, Sequence[int]], scan: Scan, depth: int, text: str = ""
) -> list[Finding]:
    """Findings in the lines around turned keywords' hits, turned back; only in text as
    sent (depth 0), never in a decoded or already turned view. rot47 reads `text` (as
    sent, the view's same offsets): it turns `-` into a backslash, which the view reads
    as an escape (`-Q` is `\\"`)."""
    if depth > 0:
        return []
    out: list[Finding] = []
    for turn, starts in hits.items():
        source = text if turn is ROT47 and text else view
        # rot47-ed keywords are mostly hex (`ghp_` is `89A0`): read near the hit only.
        before, after = (256, 1024) if turn is ROT47 else (REACH, REACH)
        # The lines of hits one after another are read as one block (a line at a time,
        # 40,000 lines of `GHP_...` took 4 s), up to BLOCK characters.
        block: tuple[int, int] | None = None
        for pos in sorted(starts):
            if block is not None and pos < block[1]:
                continue  # this line was read
            start = max(source.rfind("\n", 0, pos) + 1, pos - before)
            end = source.find("\n", pos)
            end = min(len(source) if end == -1 else end, pos + after)
            if block is not None and start <= block[1] + 1 and end - block[0] <= BLOCK:
                block = (block[0], end)
                continue
            if block is not None:
                out += _read(turn, source, *block, scan, depth)
            block = (start, end)
        if block is not None:
            out += _read(turn, source, *block, scan, depth)
    return out


BLOCK = 65_536


def _read(turn: Turn, source: str, start: int, end: int, scan: Scan, depth: int) -> list[Finding]:
    """Findings in `source[start:end]` turned back, at their place in `source`."""
    out = []
    line = source[start:end]
    for f in scan(turn.apply(line), depth + 1):
        s, e = turn.back(f.start, f.end, len(line))
        if turn is SWAPCASE and not any(c.isdigit() for c in line[s:e]):
            # A name in capitals and camel case read swapped looks random
            # (`GLC_CreateLightmapTextureArray`); a random token holds digits.
            continue
        out.append(Finding(start + s, start + e, f.kind, f.rule_id, f.tier))
    return out
