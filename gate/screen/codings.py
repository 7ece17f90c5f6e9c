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


def decode(raw: bytes, codings: list[str]) -> bytes:
    """The body with `codings` undone, the last applied first."""
    data = raw
    for name in reversed(codings):
        data = _DECODERS[name](data)
    return data


def _gzip(data: bytes) -> bytes:
    # Every member, as a standard gzip reader reads them all.
    return _streams(
        data,
        "gzip",
        "member",
        lambda: zlib.decompressobj(wbits=31),
        lambda rest: rest[:2] == b"\x1f\x8b",
    )


def _streams(
    data: bytes, name: str, unit: str, start: Callable[[], Any], follows: Callable[[bytes], bool]
) -> bytes:
    """A body that is one or more complete streams (gzip members, zstd frames), each read to
    its end; what follows the last must be none, and what follows one must start another."""
    out: list[bytes] = []
    while True:
        d = start()
        try:
            out.append(d.decompress(data))
        except (zlib.error, zstandard.ZstdError) as exc:
            raise Undecodable(f"{name}: {exc}") from exc
        if not d.eof:
            raise Undecodable(f"{name}: the stream ends before its last {unit} does")
        data = d.unused_data
        if not data:
            return b"".join(out)
        if not follows(data):
            raise Undecodable(f"{name}: {len(data)} bytes after the end of the last {unit}")


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
    # Every frame, as the zstd tool and libraries read them all.
    return _streams(
        data,
        "zstd",
        "frame",
        lambda: zstandard.ZstdDecompressor().decompressobj(),
        lambda rest: rest[:4] == _ZSTD_MAGIC or _skippable(rest[:4]),
    )


_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def _skippable(magic: bytes) -> bool:  # 0x184D2A50..5F, little-endian: no content
    return len(magic) == 4 and magic[1:] == b"\x2a\x4d\x18" and magic[0] & 0xF0 == 0x50


_DECODERS = {"gzip": _gzip, "deflate": _deflate, "br": _br, "zstd": _zstd}
