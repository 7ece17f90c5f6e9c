"""Bodies cut into content-addressed chunks at JSON element boundaries, so a resent
conversation is stored once.

Agents resend the whole conversation every turn. Cutting just after an object that ends an
array element (`}` followed by `,{"` or by `]`, found by a regex with a literal prefix, a
C-speed byte search) puts each message, content block and tool in its own chunk, so turn
N+1 shares every chunk of turn N except the few it changed. The cut is after the `}`, not
before the next `{`, so the last message of turn N (followed by `]`) is the same chunk when
turn N+1 follows it with `,{"`. Pieces are merged up to MIN_CHUNK bytes (fewer rows); the
merge re-synchronises after any element of MIN_CHUNK or more, so an edit early in the body
(a moved `cache_control`) does not shift every later chunk.
"""

from __future__ import annotations

import bisect
import hashlib
import re
import threading
from array import array
from collections.abc import Sequence
from operator import itemgetter
from typing import TYPE_CHECKING

import zstandard

if TYPE_CHECKING:
    from _hashlib import HASH

MIN_CHUNK = 512
# An object ending an array element: another follows (with or without the space Python's
# json.dumps puts there), or the array ends.
_BOUNDARY = re.compile(rb'\}(?=, ?\{"|\])')
HASH_BYTES = 32  # sha256: chunk ids on disk are content hashes, also the chain's input


# A cut after position p is decided by the bytes before p and these many after it.
_LOOKAHEAD = 4
_MARK = 64  # chunk hashes between two saved states of a body digest (resumed_digest)
_STRIDE = 64 << 10  # bytes per compare while looking for where two bodies part

Spans = list[tuple[int, int]]


def split(body: bytes, start: int = 0) -> Spans:
    """(start, end) spans covering `body[start:]` exactly, in order."""
    spans = []
    for m in _BOUNDARY.finditer(body, start):
        cut = m.end()
        if cut - start >= MIN_CHUNK:
            spans.append((start, cut))
            start = cut
    spans.append((start, len(body)))
    return spans


def split_like(
    body: bytes, prev: tuple[bytes, Spans, list[bytes]] | None
) -> tuple[Spans, list[bytes]]:
    """Spans and chunk hashes of `body`, reusing those of the session's previous body (its
    bytes, spans, hashes) for the leading spans whose bytes, and the few after them that
    decide the cut, are equal: the result is exactly split()'s, but turn N+1 of a
    conversation costs a memcmp of what it shares with turn N plus hashing what is new."""
    spans, hashes, _ = resplit(body, prev)
    return spans, hashes


def resplit(
    body: bytes, prev: tuple[bytes, Spans, list[bytes]] | None
) -> tuple[Spans, list[bytes], int]:
    """split_like, plus how many leading spans came from `prev` (their chunk ids are the
    previous body's too)."""
    if prev is None:
        return *_split_new(body, 0), 0
    old, old_spans, old_hashes = prev
    # A span is kept when its bytes and the lookahead after it are shared.
    keep = bisect.bisect_right(old_spans, shared(body, old) - _LOOKAHEAD, key=itemgetter(1))
    if not keep:
        return *_split_new(body, 0), 0
    rest, fresh = _split_new(body, old_spans[keep - 1][1])
    return old_spans[:keep] + rest, old_hashes[:keep] + fresh, keep


def resumed_digest(
    hashes: list[bytes], prev: Sequence[HASH], keep: int
) -> tuple[bytes, list[HASH]]:
    """body_digest(hashes), resumed from a previous body's saved sha256 states (`prev`,
    from this function) when its first `keep` hashes are these. Returns the states to save
    for this body: one every _MARK hashes, so a resent body hashes what is new plus fewer
    than _MARK hashes of what it shares, not every chunk's hash again."""
    j = keep // _MARK if prev else 0
    marks = list(prev[: j + 1]) if prev else [hashlib.sha256()]
    state, at = marks[-1].copy(), j * _MARK
    for nxt in range(at + _MARK, len(hashes) + 1, _MARK):
        state.update(b"".join(hashes[at:nxt]))
        marks.append(state.copy())
        at = nxt
    state.update(b"".join(hashes[at:]))
    return state.digest(), marks


def _split_new(body: bytes, start: int) -> tuple[Spans, list[bytes]]:
    rest = split(body, start)
    view = memoryview(body)
    return rest, [digest(view[a:b]) for a, b in rest]


def shared(body: bytes, old: bytes) -> int:
    """The length of the prefix `body` and `old` share, in a few C-speed compares: one per
    _STRIDE bytes while they are equal, then a binary search of the stride that differs
    (bytes compared: about the shared length plus two strides, however many chunks)."""
    view, end, lo = memoryview(old), min(len(body), len(old)), 0
    while lo < end:
        hi = min(lo + _STRIDE, end)
        if not body.startswith(view[lo:hi], lo):
            break
        lo = hi
    else:
        return end
    while hi - lo > 1:  # equal before lo; a difference before hi
        mid = (lo + hi) // 2
        if body.startswith(view[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return lo


def digest(data: bytes | memoryview) -> bytes:
    return hashlib.sha256(data).digest()


def body_digest(chunk_hashes: list[bytes]) -> bytes:
    """What the chain records for a body: a hash over its chunks' hashes, in order (equal to
    hashing the body's bytes for integrity, without re-reading them)."""
    return hashlib.sha256(b"".join(chunk_hashes)).digest()


_zstd = threading.local()


def pack(data: bytes | memoryview) -> bytes:
    """zstd level 3, with this thread's compressor: making one per call costs more than
    compressing a small chunk."""
    codec = getattr(_zstd, "c", None)
    if codec is None:
        codec = _zstd.c = zstandard.ZstdCompressor(level=3)
    return bytes(codec.compress(data))


def unpack(data: bytes) -> bytes:
    codec = getattr(_zstd, "d", None)
    if codec is None:
        codec = _zstd.d = zstandard.ZstdDecompressor()
    return bytes(codec.decompress(data))


def stored(codec: str, data: bytes) -> bytes:
    """A chunk's raw bytes from its row (`codec` is zstd, or raw before the background pass)."""
    return bytes(data) if codec == "raw" else unpack(data)


def pack_refs(ids: Sequence[int]) -> bytes:
    """A request's chunk ids, delta-coded then zstd'd: a resent conversation's ids run in
    insertion order, so the deltas are mostly 1 and pack to a few bytes per hundred."""
    return pack(deltas(ids))


def deltas(ids: Sequence[int], last: int = 0) -> bytes:
    """`ids` delta-coded (each minus the one before it, the first minus `last`) as int64s:
    what pack_refs compresses. The deltas of a list's prefix are a prefix of its deltas,
    so a resent body's are the previous body's, cut, plus those of its new ids."""
    return array("q", (b - a for a, b in zip([last, *ids], ids, strict=False))).tobytes()


def unpack_refs(blob: bytes) -> list[int]:
    deltas = array("q")
    deltas.frombytes(unpack(blob))
    out, total = [], 0
    for d in deltas:
        total += d
        out.append(total)
    return out


_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def text_of(chunk: bytes) -> str:
    """A chunk as searchable text: JSON string escapes undone (a chunk is a fragment, not a
    document, so it cannot be parsed), so `\\n` does not glue words together."""
    raw = chunk.decode("utf-8", "replace")

    def unescape(m: re.Match[str]) -> str:
        if m[1]:
            code = int(m[1], 16)
            return " " if 0xD800 <= code <= 0xDFFF else chr(code)
        return _SIMPLE[m[2]]

    return _ESCAPE.sub(unescape, raw)
