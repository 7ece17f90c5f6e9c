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
from collections.abc import Iterable

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


def decode(raw: bytes, codings: list[str]) -> bytes:
    """The body with `codings` undone, the last applied first."""
    data = raw
    for name in reversed(codings):
        data = _DECODERS[name](data)
    return data


def _gzip(data: bytes) -> bytes:
    out: list[bytes] = []
    while True:  # every member, as a standard gzip reader reads them all
        d = zlib.decompressobj(wbits=31)
        try:
            out.append(d.decompress(data))
        except zlib.error as exc:
            raise Undecodable(f"gzip: {exc}") from exc
        if not d.eof:
            raise Undecodable("gzip: the stream ends before its last member does")
        data = d.unused_data
        if not data:
            return b"".join(out)
        if data[:2] != b"\x1f\x8b":
            raise Undecodable(f"gzip: {len(data)} bytes after the end of the last member")


def _deflate(data: bytes) -> bytes:
    # HTTP's "deflate" is the zlib format (RFC 9110 8.4.1.2); raw deflate is not read.
    d = zlib.decompressobj()
    try:
        out = d.decompress(data)
    except zlib.error as exc:
        raise Undecodable(f"deflate: {exc}") from exc
    if not d.eof:
        raise Undecodable("deflate: the stream is cut short")
    if d.unused_data:
        raise Undecodable(f"deflate: {len(d.unused_data)} bytes after the end of the stream")
    return out


def _br(data: bytes) -> bytes:
    d = brotli.Decompressor()
    try:
        out = d.process(data)
    except brotli.error as exc:
        # The decoder also fails here on bytes after the end of the stream.
        raise Undecodable(f"br: the stream is corrupt or has bytes after its end ({exc})") from exc
    if not d.is_finished():
        raise Undecodable("br: the stream is cut short")
    return bytes(out)


def _zstd(data: bytes) -> bytes:
    out: list[bytes] = []
    while True:  # every frame, as the zstd tool and libraries read them all
        d = zstandard.ZstdDecompressor().decompressobj()
        try:
            out.append(d.decompress(data))
        except zstandard.ZstdError as exc:
            raise Undecodable(f"zstd: {exc}") from exc
        if not d.eof:
            raise Undecodable("zstd: the stream ends before its last frame does")
        data = d.unused_data
        if not data:
            return b"".join(out)
        if data[:4] != _ZSTD_MAGIC and not _skippable(data[:4]):
            raise Undecodable(f"zstd: {len(data)} bytes after the end of the last frame")


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _skippable(magic: bytes) -> bool:  # 0x184D2A50..5F, little-endian: no content
    return len(magic) == 4 and magic[1:] == b"\x2a\x4d\x18" and magic[0] & 0xF0 == 0x50


_DECODERS = {"gzip": _gzip, "deflate": _deflate, "br": _br, "zstd": _zstd}
