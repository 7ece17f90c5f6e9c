"""Content-Encoding read strictly: every declared coding undone, each stream whole, nothing after.

The bytes that leave are bytes the gate screened, read the way the provider will read
them; what the gate cannot read that way it blocks. So a coding is undone only when the
whole body is exactly a sequence of complete streams of it: a gzip body is one or more
complete members, a zstd body one or more complete frames, a deflate (zlib) or br body one
stream; any byte after the end, a coding gate does not know, or a stream cut short raises
Undecodable naming the problem.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from typing import Any

import brotli
import zstandard

KNOWN = ("identity", "gzip", "deflate", "br", "zstd")


class Undecodable(ValueError):
    """The body cannot be read exactly as declared; the message says why."""


def declared(values: Iterable[str]) -> list[str]:
    """The codings of every Content-Encoding header, in the order they were applied
    (names are case-insensitive; `identity` adds nothing)."""
    names: list[str] = []
    for value in values:
        for name in value.split(","):
            name = name.strip().lower()
            if not name:
                raise Undecodable("an empty name in Content-Encoding")
            if name not in KNOWN:
                raise Undecodable(
                    f"unknown content-coding {name[:20]!r} (gate reads only {', '.join(KNOWN)})"
                )
            if name != "identity":
                names.append(name)
    return names


MAX_DECODED = 64 * 1024 * 1024  # a decoded body past this is refused, never inflated whole


class TooLarge(Undecodable):
    """The body decodes to more than gate will hold."""


def decode(raw: bytes, codings: list[str], limit: int = MAX_DECODED) -> bytes:
    """The body with `codings` undone, the last applied first; no stage may decode to more
    than `limit` bytes (a small compressed body can expand without bound)."""
    data = raw
    for name in reversed(codings):
        data = _DECODERS[name](data, limit)
    return data


def _too_large(name: str, limit: int) -> TooLarge:
    return TooLarge(
        f"{name}: the body decodes to more than {limit // (1024 * 1024)} MiB,"
        " more than gate screens"
    )


def _inflate(d: Any, data: bytes, limit: int, name: str, whole: int | None = None) -> bytes:
    """What a zlib decompressobj makes of `data`, in steps that never pass `limit` (what is
    left of the body's limit, `whole`)."""
    out: list[bytes] = []
    total = 0
    while True:
        room = limit - total + 1
        try:
            chunk = d.decompress(data, room)
        except zlib.error as exc:
            raise Undecodable(f"{name}: {exc}") from exc
        out.append(chunk)
        total += len(chunk)
        if total > limit:
            raise _too_large(name, whole or limit)
        data = d.unconsumed_tail
        if d.eof or (not data and len(chunk) < room):
            return b"".join(out)


def _gzip(data: bytes, limit: int) -> bytes:
    # Every member, as a standard gzip reader reads them all.
    def member(rest: bytes, room: int) -> tuple[bytes, bool, bytes]:
        d = zlib.decompressobj(wbits=31)
        out = _inflate(d, rest, room, "gzip", limit)
        return out, d.eof, d.unused_data

    return _streams(data, limit, "gzip", "member", member, lambda rest: rest[:2] == b"\x1f\x8b")


def _streams(
    data: bytes,
    limit: int,
    name: str,
    unit: str,
    one: Callable[[bytes, int], tuple[bytes, bool, bytes]],
    follows: Callable[[bytes], bool],
) -> bytes:
    """A body that is one or more complete streams (gzip members, zstd frames), each read to
    its end; what follows the last must be none, and what follows one must start another."""
    out: list[bytes] = []
    total = 0
    while True:
        chunk, eof, data = one(data, limit - total)
        out.append(chunk)
        total += len(chunk)
        if not eof:
            raise Undecodable(f"{name}: the stream ends before its last {unit} does")
        if not data:
            return b"".join(out)
        if not follows(data):
            raise Undecodable(f"{name}: {len(data)} bytes after the end of the last {unit}")


def _deflate(data: bytes, limit: int) -> bytes:
    # HTTP's "deflate" is the zlib format (RFC 9110 8.4.1.2); raw deflate is not read.
    d = zlib.decompressobj()
    out = _inflate(d, data, limit, "deflate")
    if not d.eof:
        raise Undecodable("deflate: the stream is cut short")
    if d.unused_data:
        raise Undecodable(f"deflate: {len(d.unused_data)} bytes after the end of the stream")
    return out


def _br(data: bytes, limit: int) -> bytes:
    d = brotli.Decompressor()
    out: list[bytes] = []
    total = 0
    try:
        chunk = d.process(data, output_buffer_limit=_STEP)
        while True:
            out.append(chunk)
            total += len(chunk)
            if total > limit:
                raise _too_large("br", limit)
            if d.is_finished() or not chunk:  # no more output without more input
                break
            chunk = d.process(b"", output_buffer_limit=_STEP)
    except brotli.error as exc:
        # The decoder also fails here on bytes after the end of the stream.
        raise Undecodable(f"br: the stream is corrupt or has bytes after its end ({exc})") from exc
    if not d.is_finished():
        raise Undecodable("br: the stream is cut short")
    return b"".join(out)


_STEP = 1024 * 1024  # brotli and zstd output is taken this much at a time


def _zstd(data: bytes, limit: int) -> bytes:
    # Every frame, as the zstd tool and libraries read them all.
    def frame(rest: bytes, room: int) -> tuple[bytes, bool, bytes]:
        # The frame's size is measured first, a step at a time, as the decompressobj below
        # (which finds where the frame ends) would inflate it whole.
        reader = zstandard.ZstdDecompressor().stream_reader(rest, read_across_frames=False)
        size = 0
        try:
            while chunk := reader.read(_STEP):
                size += len(chunk)
                if size > room:
                    raise _too_large("zstd", limit)
        except zstandard.ZstdError:
            pass  # reported, with the same output before it, by the decompressobj
        d = zstandard.ZstdDecompressor().decompressobj()
        try:
            out = d.decompress(rest)
        except zstandard.ZstdError as exc:
            raise Undecodable(f"zstd: {exc}") from exc
        return out, d.eof, d.unused_data

    return _streams(
        data,
        limit,
        "zstd",
        "frame",
        frame,
        lambda rest: rest[:4] == _ZSTD_MAGIC or _skippable(rest[:4]),
    )


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _skippable(magic: bytes) -> bool:  # 0x184D2A50..5F, little-endian: no content
    return len(magic) == 4 and magic[1:] == b"\x2a\x4d\x18" and magic[0] & 0xF0 == 0x50


_DECODERS = {"gzip": _gzip, "deflate": _deflate, "br": _br, "zstd": _zstd}
