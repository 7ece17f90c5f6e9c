"""What a person is shown of a finding: enough to recognise it, never the value itself."""

from __future__ import annotations

MASK = "•"
SHOWN = 4  # characters kept at each end of a long value
CONTEXT_LINES = 1  # lines shown before and after the finding's line
LINE_CHARS = 160  # a long line is cut around the finding


def preview(value: str) -> str:
    """First and last 4 characters, the middle masked; short values are masked whole."""
    if len(value) < 3 * SHOWN:
        return MASK * min(len(value), 8)
    return f"{value[:SHOWN]}{MASK * min(len(value) - 2 * SHOWN, 12)}{value[-SHOWN:]}"


def masked(text: str, spans: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int]]]:
    """`text` with each (sorted, disjoint) span replaced by its preview, and where each
    preview now sits."""
    out: list[str] = []
    moved: list[tuple[int, int]] = []
    size = last = 0
    for start, end in spans:
        shown = preview(text[start:end])
        out += [text[last:start], shown]
        size += start - last
        moved.append((size, size + len(shown)))
        size += len(shown)
        last = end
    out.append(text[last:])
    return "".join(out), moved


def context(shown: str, start: int, end: int) -> str:
    """The lines around shown[start:end], where `shown` already has every finding masked."""
    first = shown.rfind("\n", 0, start) + 1
    for _ in range(CONTEXT_LINES):
        if first > 0:
            first = shown.rfind("\n", 0, first - 1) + 1
    last = shown.find("\n", end)
    for _ in range(CONTEXT_LINES):
        if last != -1:
            last = shown.find("\n", last + 1)
    out, pos = [], first
    for line in shown[first : None if last == -1 else last].split("\n"):
        at = start - pos if pos <= start <= pos + len(line) else 0
        out.append(_cut(line, at))
        pos += len(line) + 1
    return "\n".join(out)


def _cut(line: str, at: int) -> str:
    """A long line (minified code, one-line JSON) is cut to a window around `at`."""
    if len(line) <= LINE_CHARS:
        return line
    lo = max(0, min(at - LINE_CHARS // 3, len(line) - LINE_CHARS))
    return (
        ("…" if lo else "")
        + line[lo : lo + LINE_CHARS]
        + ("…" if lo + LINE_CHARS < len(line) else "")
    )
