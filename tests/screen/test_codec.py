"""The strict readers on their own: Content-Encoding, JSON with one meaning, request paths."""

from __future__ import annotations

import gzip
import json
import zlib

import brotli
import orjson
import pytest
import zstandard

from gate.proxy.routing import normalise
from gate.screen import codings
from gate.screen.codec import Ambiguous, parse

_zstd = zstandard.ZstdCompressor().compress
_SKIPPABLE = (0x184D2A50).to_bytes(4, "little") + (3).to_bytes(4, "little") + b"abc"


@pytest.mark.parametrize(
    ("data", "names", "want"),
    [
        # mtime=0: the bytes are in the test ids, which every xdist worker must collect alike
        (gzip.compress(b"a", mtime=0) + gzip.compress(b"b", mtime=0), ["gzip"], b"ab"),
        (
            _zstd(b"a") + _SKIPPABLE + _zstd(b"b"),
            ["zstd"],
            b"ab",
        ),  # a skippable frame holds nothing
        (brotli.compress(zlib.compress(b"x")), ["deflate", "br"], b"x"),
        (b"plain", [], b"plain"),
    ],
)
def test_what_standard_decoders_read_is_what_gate_reads(
    data: bytes, names: list[str], want: bytes
) -> None:
    assert codings.decode(data, names) == want


@pytest.mark.parametrize(
    ("data", "names", "words"),
    [
        (gzip.compress(b"a", mtime=0) + b"\x1f", ["gzip"], "bytes after the end"),
        (gzip.compress(b"a", mtime=0) + b"\x1f\x8b", ["gzip"], "ends before its last member"),
        (_zstd(b"a")[:-1], ["zstd"], "ends before"),
        (zlib.compress(b"a") + zlib.compress(b"b"), ["deflate"], "bytes after the end"),
        (brotli.compress(b"a") + brotli.compress(b"b"), ["br"], "br:"),
    ],
)
def test_anything_a_decoder_would_skip_or_stop_at_is_refused(
    data: bytes, names: list[str], words: str
) -> None:
    with pytest.raises(codings.Undecodable, match=words):
        codings.decode(data, names)


@pytest.mark.parametrize(
    ("headers", "names"),
    [
        (["GZIP"], ["gzip"]),
        (["gzip, BR"], ["gzip", "br"]),
        (["identity"], []),
        (["gzip", "zstd"], ["gzip", "zstd"]),
        ([], []),
    ],
)
def test_declared_codings_are_read_case_insensitively_in_order(
    headers: list[str], names: list[str]
) -> None:
    assert codings.declared(headers) == names


@pytest.mark.parametrize("header", ["x-gzip", "gzip;q=1", "gzip,", "", "compress", "aes128gcm"])
def test_unknown_or_empty_coding_names_are_refused(header: str) -> None:
    with pytest.raises(codings.Undecodable):
        codings.declared([header])


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1, "b": [1, 2.5, "x", null, true]}',
        orjson.dumps({"k": "\u00e9\U0001f600"}),
        json.dumps({"k": "\u00e9"}).encode(),
        b'{"a":{"a":{"a":1}}}',
        b'[{"a":1},{"a":2}]',
        b'{"x":"\\ud83d\\ude00"}',
        b'{"n":18446744073709551615}',
        b'{"n":-9223372036854775808}',
    ],
)
def test_bodies_with_one_meaning_parse_as_orjson_and_json_read_them(raw: bytes) -> None:
    assert parse(raw) == json.loads(raw)


@pytest.mark.parametrize(
    ("raw", "words"),
    [
        (b'{"a":1,"a":1}', "the key a appears"),
        (b'{"a":[{"b":{"c":1,"c":2}}]}', "the key a[0].b.c appears"),
        (b'{"a": {"x y": 1, "x y": 2}}', "the key a[key #1] appears"),  # only plain keys are shown
        (b'{"\\u0061":1,"a":2}', "the key a appears"),
        (b'{"n":NaN}', "NaN"),
        (b'{"n":18446744073709551616}', "20 digits"),
        (b'{"n":-1e309}', "overflows"),
        (b'{"s":"\\udfff"}', "lone UTF-16 surrogate"),
        (b"[" * 3000 + b"]" * 3000, "nests deeper"),
    ],
)
def test_bodies_with_two_meanings_are_refused_saying_where(raw: bytes, words: str) -> None:
    with pytest.raises(Ambiguous, match=words.replace("[", r"\[").replace(".", r"\.")):
        parse(raw)


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a":1} {}',
        b"\xef\xbb\xbf{}",
        '{"a":1}'.encode("utf-16"),
        b'{"a":"\xff"}',
        b"{'a':1}",
        b'{"a":1,}',
    ],
)
def test_text_that_is_not_strict_utf8_json_is_refused(raw: bytes) -> None:
    with pytest.raises(ValueError):
        parse(raw)


@pytest.mark.parametrize(
    ("target", "want"),
    [
        ("/anthropic/v1/messages", "/anthropic/v1/messages"),
        ("/a//b/./c/../d/", "/a/b/d"),
        ("/a/%62/%7E%2d%2Ex", "/a/b/~-.x"),
        ("/a/b.", "/a/b"),
        ("/../../a", "/a"),
        ("/a/%2e%2e/b", "/b"),
        ("/a?x=/../y", "/a?x=/../y"),
        ("/a/%3A%40", "/a/%3A%40"),  # reserved characters stay encoded
    ],
)
def test_paths_are_normalised_as_a_server_reads_them(target: str, want: str) -> None:
    assert normalise(target) == want


@pytest.mark.parametrize("target", ["/a%2fb", "/a%5Cb", "/a\\b", "/a%00"])
def test_paths_servers_read_differently_are_refused(target: str) -> None:
    with pytest.raises(ValueError, match="encoded slash"):
        normalise(target)


def _bomb(name: str, size: int) -> bytes:
    """`size` zero bytes compressed in steps, never held whole."""
    step = b"\0" * (1024 * 1024)
    if name == "br":
        c = brotli.Compressor()
        return b"".join(c.process(step) for _ in range(size // len(step))) + c.finish()
    if name == "zstd":
        z = zstandard.ZstdCompressor().compressobj()
        return b"".join(z.compress(step) for _ in range(size // len(step))) + z.flush()
    d = zlib.compressobj(9, wbits=31 if name == "gzip" else 15)
    return b"".join(d.compress(step) for _ in range(size // len(step))) + d.flush()


@pytest.mark.parametrize("name", ["gzip", "deflate", "br", "zstd"])
def test_a_body_that_decodes_past_the_limit_is_refused_not_inflated(name: str) -> None:
    bomb = _bomb(name, 64 * 1024 * 1024)
    assert len(bomb) < 1024 * 1024
    with pytest.raises(codings.TooLarge, match="more than 4 MiB"):
        codings.decode(bomb, [name], limit=4 * 1024 * 1024)
    # Under the limit the same reader reads it whole.
    small = _bomb(name, 2 * 1024 * 1024)
    assert codings.decode(small, [name], limit=4 * 1024 * 1024) == b"\0" * (2 * 1024 * 1024)


def test_the_limit_covers_every_member_and_every_stage_together() -> None:
    member = _bomb("gzip", 3 * 1024 * 1024)
    with pytest.raises(codings.TooLarge):
        codings.decode(member + member, ["gzip"], limit=4 * 1024 * 1024)
    frame = _bomb("zstd", 3 * 1024 * 1024)
    with pytest.raises(codings.TooLarge):
        codings.decode(frame + frame, ["zstd"], limit=4 * 1024 * 1024)
