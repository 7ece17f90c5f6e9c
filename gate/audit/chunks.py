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

import hashlib
import re
import threading
from array import array

import zstandard

MIN_CHUNK = 512
# An object ending an array element: another follows (with or without the space Python's
# json.dumps puts there), or the array ends.
_BOUNDARY = re.compile(rb'\}(?=, ?\{"|\])')
HASH_BYTES = 32  # sha256: chunk ids on disk are content hashes, also the chain's input


# A cut after position p is decided by the bytes before p and these many after it.
_LOOKAHEAD = 4

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


def split_like(body: bytes, prev: tuple[bytes, Spans, list[bytes]] | None
               ) -> tuple[Spans, list[bytes]]:
    """Spans and chunk hashes of `body`, reusing those of the session's previous body (its
    bytes, spans, hashes) for the leading spans whose bytes, and the few after them that
    decide the cut, are equal: the result is exactly split()'s, but turn N+1 of a
    conversation costs a memcmp of what it shares with turn N plus hashing what is new."""
    keep = 0
    if prev is not None:
        old, old_spans, _ = prev
        view = memoryview(old)
        for a, b in old_spans:
            if b + _LOOKAHEAD > len(old) or not body.startswith(view[a:b + _LOOKAHEAD], a):
                break
            keep += 1
    start = prev[1][keep - 1][1] if prev is not None and keep else 0
    rest = split(body, start)
    view = memoryview(body)
    fresh = [digest(view[a:b]) for a, b in rest]
    if prev is None or not keep:
        return rest, fresh
    return prev[1][:keep] + rest, prev[2][:keep] + fresh


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


def pack_refs(ids: list[int]) -> bytes:
    """A request's chunk ids, delta-coded then zstd'd: a resent conversation's ids run in
    insertion order, so the deltas are mostly 1 and pack to a few bytes per hundred."""
    deltas = array("q", (b - a for a, b in zip([0, *ids], ids, strict=False)))
    return pack(deltas.tobytes())


def unpack_refs(blob: bytes) -> list[int]:
    deltas = array("q")
    deltas.frombytes(unpack(blob))
    out, total = [], 0
    for d in deltas:
        total += d
        out.append(total)
    return out


_ESCAPE = re.compile(r'\\(?:u([0-9a-fA-F]{4})|(["\\/bfnrt]))')
_SIMPLE = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r",
           "t": "\t"}


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
