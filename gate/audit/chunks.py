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
from array import array

import zstandard

MIN_CHUNK = 512
# An object ending an array element: another follows (with or without the space Python's
# json.dumps puts there), or the array ends.
_BOUNDARY = re.compile(rb'\}(?=, ?\{"|\])')
HASH_BYTES = 32  # sha256: chunk ids on disk are content hashes, also the chain's input


def split(body: bytes) -> list[tuple[int, int]]:
    """(start, end) spans covering `body` exactly, in order."""
    spans = []
    start = 0
    for m in _BOUNDARY.finditer(body):
        cut = m.end()
        if cut - start >= MIN_CHUNK:
            spans.append((start, cut))
            start = cut
    spans.append((start, len(body)))
    return spans


def digest(data: bytes | memoryview) -> bytes:
    return hashlib.sha256(data).digest()


def body_digest(chunk_hashes: list[bytes]) -> bytes:
    """What the chain records for a body: a hash over its chunks' hashes, in order (equal to
    hashing the body's bytes for integrity, without re-reading them)."""
    return hashlib.sha256(b"".join(chunk_hashes)).digest()


def pack_refs(ids: list[int]) -> bytes:
    """A request's chunk ids, delta-coded then zstd'd: a resent conversation's ids run in
    insertion order, so the deltas are mostly 1 and pack to a few bytes per hundred."""
    deltas = array("q", (b - a for a, b in zip([0, *ids], ids, strict=False)))
    return zstandard.ZstdCompressor(level=3).compress(deltas.tobytes())


def unpack_refs(blob: bytes) -> list[int]:
    deltas = array("q")
    deltas.frombytes(zstandard.ZstdDecompressor().decompress(blob))
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
