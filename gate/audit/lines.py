"""The complete lines of a stream that hold a marker, found without splitting the rest."""

from __future__ import annotations


def marked(pending: bytes, chunk: bytes, markers: tuple[bytes, ...]) -> tuple[list[bytes], bytes]:
    """The complete lines of `pending + chunk` holding any of `markers` (a marker holds no
    newline), in stream order, and the incomplete last line to carry over. A streamed reply
    is mostly text deltas: looking at every line cost Python work per chunk; a search for
    the markers runs in C, and only the few lines that hold one are cut out."""
    data = pending + chunk
    end = data.rfind(b"\n")
    if end < 0:
        return [], data
    starts: dict[int, bytes] = {}
    for marker in markers:
        at = data.find(marker, 0, end)
        while at >= 0:
            start = data.rfind(b"\n", 0, at) + 1
            stop = data.find(b"\n", at)  # at most `end`: the marker lies before it
            starts.setdefault(start, data[start:stop])
            at = data.find(marker, stop, end)
    lines = [starts[s] for s in sorted(starts)] if len(markers) > 1 else list(starts.values())
    return lines, data[end + 1 :]
