"""Compressed data found inside outbound text, inflated leniently and never past a bound.

`gzip -c .env | base64` carries a denied file in a form no index of its values matches, so
gate inflates what it finds, but an agent's output can also be a zip bomb: every format is
inflated a step at a time, and inflation stops, raising TooLarge, once it passes what the
caller's Budget has left or a ratio no text compresses to. Unlike Content-Encoding (read
strictly in codec.py) this is lenient: a stream cut short or followed by junk still yields
what it holds, since `head -c 300` of a gzip stream is still a leak.
"""

from __future__ import annotations

import bz2
import lzma
import re
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import zstandard

# As much as a request body may decode to (codec.MAX_DECODED): an office document or an
# archive attached in base64 is read whole, not withheld for its size.
MAX_PER_STRING = 64 << 20  # bytes all the blobs of one string may inflate to, in all
FREE = 1 << 20  # inflated bytes allowed at any ratio (a tar of a small .env is 10 KiB)
RATIO = 50  # past FREE, at most this many bytes out per byte in: text and XML stay under
# it, a bomb (zeros reach 1000) is stopped after a few MiB
LAYERS = 3  # compressed inside compressed (tar.gz in gzip), no deeper
_STEP = 1 << 20


class TooLarge(ValueError):
    """The blob inflates to more than gate screens; the caller withholds it whole."""


@dataclass(slots=True)
class Budget:
    """Inflated bytes one string may still produce (its blobs and their layers share it)."""

    left: int = MAX_PER_STRING

    def room(self, compressed: int) -> int:
        return min(self.left, max(FREE, RATIO * compressed))

    def spend(self, n: int) -> None:
        self.left -= n


def magic_at(head: bytes) -> int:
    """Where a compression format's signature starts in `head`, or -1 (zlib's counts only
    at the start: see _plausible)."""
    m = _ANY_SIGNATURE.search(head)
    while m:
        sig = next(s for s in SIGNATURES if head.startswith(s, m.start()))
        if _plausible(head, m.start(), sig):
            return m.start()
        m = _ANY_SIGNATURE.search(head, m.start() + 1)
    return 0 if head[:1] == b"\x78" and _plausible(head, 0, b"\x78") else -1


def inflate(data: bytes, budget: Budget) -> bytes:
    """What the compressed `data` (a signature at its start) holds, layers undone; a
    nested compressed stream is undone too. Raises TooLarge past the budget."""
    for _ in range(LAYERS):
        inflater = _inflater(data)
        if inflater is None:
            return data
        room = budget.room(len(data))
        out = inflater(data, room)
        if len(out) > room:
            raise TooLarge(f"a compressed blob inflates past {room} bytes")
        budget.spend(len(out))
        data = out
    return data


def _inflater(data: bytes) -> Callable[[bytes, int], bytes] | None:
    for sig, fn in _BY_SIGNATURE:
        if data.startswith(sig) and _plausible(data, 0, sig):
            return fn
    return None


def _plausible(data: bytes, i: int, sig: bytes) -> bool:
    if sig == _LZMA:  # then a dictionary size xz writes (2^n or 3 * 2^(n-1)), a length
        head = data[i + 1 : i + 13]
        if len(head) < 12:
            return False
        size = int.from_bytes(head[:4], "little")
        length = head[4:]
        odd = size // 3 if size % 3 == 0 else size
        return (
            size >= 4096
            and odd & (odd - 1) == 0
            and (length == b"\xff" * 8 or int.from_bytes(length, "little") < 1 << 40)
        )
    if sig == b"BZh":  # then the block size, 1 to 9
        return data[i + 3 : i + 4] in (b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8", b"9")
    if len(sig) == 1:
        # A zlib header (deflate, its check bits) is two bytes, one in 500 or so of random
        # data: it counts only at the start, and only if its first bytes inflate.
        flg = data[i + 1 : i + 2]
        if i != 0 or not flg or (data[i] << 8 | flg[0]) % 31:
            return False
        try:
            zlib.decompressobj().decompress(data[:64], 1)
        except zlib.error:
            return False
    return True


def _zlib(data: bytes, room: int, wbits: int) -> tuple[bytes, bytes]:
    """Inflated bytes (at most room + 1) and, if the stream ended, what follows it."""
    d = zlib.decompressobj(wbits)
    out: list[bytes] = []
    total = 0
    try:
        while total <= room:
            chunk = d.decompress(data, room - total + 1)
            out.append(chunk)
            total += len(chunk)
            data = d.unconsumed_tail
            if d.eof or (not data and not chunk):
                break
    except zlib.error:
        pass  # what came out before the damage is kept
    return b"".join(out), d.unused_data if d.eof else b""


def _gzip(data: bytes, room: int) -> bytes:
    out = b""
    while data[:2] == b"\x1f\x8b" and len(out) <= room:  # every member
        chunk, data = _zlib(data, room - len(out), 31)
        out += chunk
    return out


def _zip(data: bytes, room: int) -> bytes:
    """Each entry of a zip archive, read from its local header (a zip written to a pipe
    has no usable central directory)."""
    out = b""
    while data[:4] == b"PK\x03\x04" and len(data) >= 30 and len(out) <= room:
        method, size = struct.unpack_from("<H", data, 8)[0], struct.unpack_from("<I", data, 18)[0]
        name, extra = struct.unpack_from("<HH", data, 26)
        body = data[30 + name + extra :]
        out += data[30 : 30 + name] + b"\n"
        if method == 8:
            chunk, rest = _zlib(body, room - len(out), -15)
        else:  # stored, or a method gate does not read: its bytes as they are
            chunk, rest = body[: size or room], body[size or room :]
        out += chunk
        nxt = rest.find(b"PK\x03\x04", 0, 64)  # past a data descriptor, if any
        data = rest[nxt:] if nxt != -1 else b""
    return out


def _stepwise(d: bz2.BZ2Decompressor | lzma.LZMADecompressor, data: bytes, room: int) -> bytes:
    out: list[bytes] = []
    total = 0
    try:
        chunk = d.decompress(data, min(room + 1, _STEP))
        while True:
            out.append(chunk)
            total += len(chunk)
            if total > room or d.eof or d.needs_input:
                break
            chunk = d.decompress(b"", min(room - total + 1, _STEP))
    except (OSError, EOFError, lzma.LZMAError):
        pass
    return b"".join(out)


def _zstd(data: bytes, room: int) -> bytes:
    reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
    out: list[bytes] = []
    total = 0
    try:
        while total <= room and (chunk := reader.read(min(room - total + 1, _STEP))):
            out.append(chunk)
            total += len(chunk)
    except zstandard.ZstdError:
        pass
    return b"".join(out)


_LZMA = b"\x5d\x00\x00"  # the properties byte every xz preset writes, then a size's low bytes
_BY_SIGNATURE: tuple[tuple[bytes, Callable[[bytes, int], bytes]], ...] = (
    (b"\x1f\x8b\x08", _gzip),
    (b"\xfd7zXZ\x00", lambda d, r: _stepwise(lzma.LZMADecompressor(), d, r)),
    # .lzma (`lzma -c`, `xz --format=lzma`: xz-utils' legacy format), told by its header.
    (_LZMA, lambda d, r: _stepwise(lzma.LZMADecompressor(lzma.FORMAT_ALONE), d, r)),
    (b"BZh", lambda d, r: _stepwise(bz2.BZ2Decompressor(), d, r)),
    (b"\x28\xb5\x2f\xfd", _zstd),
    (b"PK\x03\x04", _zip),
    # zlib (`zlib.compress`, `openssl zlib`, `pigz -z`): a 32 KiB window, as nearly all are.
    (b"\x78", lambda d, r: _zlib(d, r, 15)[0]),
)
SIGNATURES = tuple(sig for sig, _ in _BY_SIGNATURE)
# One search for them all (a base64 run in ordinary traffic is tested for each).
_ANY_SIGNATURE = re.compile(b"|".join(re.escape(s) for s in SIGNATURES if len(s) > 1))
