"""Encoded and compressed runs: decoded so the denied-file index reads them, never past a
bound, and ordinary data (images, other files) left alone."""

from __future__ import annotations

import base64
import bz2
import gzip
import lzma
import struct
import zlib

import pytest
import zstandard

from conftest import fake_secret
from gate.rules.model import Effect, Rule
from gate.screen import unpack
from gate.screen.blobs import blobs
from gate.screen.denied_walk import UNSCREENED, Source
from gate.screen.fingerprints import DeniedIndex

SOURCE = Source(
    "/p/.env",
    Rule(
        effect=Effect.DENY,
        tool="Read",
        specifier="./.env",
        source="rules/default.yaml",
        line=7,
        root=None,
    ),
)


def _index(value: str) -> DeniedIndex:
    return DeniedIndex({value: SOURCE})


def _png(payload: bytes) -> bytes:
    """A PNG-shaped file: its signature, then a zlib stream (IDAT) 41 bytes in."""
    ihdr = struct.pack(">IIBBBBB", 64, 64, 8, 2, 0, 0, 0)
    idat = zlib.compress(payload)
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", 13)
        + b"IHDR"
        + ihdr
        + b"\0\0\0\0"
        + struct.pack(">I", len(idat))
        + b"IDAT"
        + idat
    )


def test_a_png_holding_the_value_in_its_pixels_is_not_inflated() -> None:
    # Images are the common base64 in agent traffic: only a signature at the start of the
    # data makes gate inflate it (a zlib header deep inside is not one).
    value = fake_secret("sk_live_")
    text = base64.b64encode(_png(f"STRIPE_KEY={value}\n".encode() * 50)).decode()
    assert list(blobs(text, unpack.Budget())) == []


@pytest.mark.parametrize(
    "pack",
    [
        gzip.compress,
        zlib.compress,
        lzma.compress,
        bz2.compress,
        zstandard.ZstdCompressor().compress,
        lambda d: b"xy" + gzip.compress(d),  # junk bytes before the stream
        lambda d: gzip.compress(d)[: len(d) // 2 + 20],  # cut short
    ],
)
@pytest.mark.parametrize(
    "encode",
    [
        lambda b: base64.b64encode(b).decode(),
        lambda b: "Q" + base64.b64encode(b).decode(),  # junk characters before the run
        lambda b: base64.urlsafe_b64encode(b).decode(),
        lambda b: b.hex(),
        lambda b: b.hex().upper(),
        lambda b: base64.b32encode(b).decode(),
    ],
)
def test_compressed_then_encoded_is_withheld_whole(pack: object, encode: object) -> None:
    value = fake_secret("sk_live_")
    plain = f"# app\nSTRIPE_KEY={value}\nDEBUG=true\n".encode() * 3
    run = encode(pack(plain))  # type: ignore[operator]
    text = f"é output: {run}\nthat is all"  # a non-ASCII character: offsets stay right
    out, hits = _index(value).redact(text)
    assert out == f"é output: {SOURCE.placeholder()}\nthat is all"
    assert hits[0].source is SOURCE


def test_base32_of_text_at_any_alignment_and_wrapped() -> None:
    value = fake_secret("p4ss-")
    plain = f"DB_PASSWORD={value}\n".encode()
    index = _index(value)
    wrapped = base64.b32encode(plain * 4).decode()
    wrapped = "\n".join(wrapped[i : i + 76] for i in range(0, len(wrapped), 76))
    for run in (
        base64.b32encode(plain).decode(),
        base64.b32hexencode(plain).decode(),
        "ABC" + base64.b32encode(plain).decode().rstrip("="),  # not on a group of 8
        wrapped,
    ):
        out, _ = index.redact(f"x\n{run}\ny")
        assert out == f"x\n{SOURCE.placeholder()}\ny", run


def test_upper_case_inside_a_base64_token_is_not_read_as_base32() -> None:
    value = fake_secret("p4ss-")
    inner = base64.b32encode(f"DB_PASSWORD={value}\n".encode()).decode().rstrip("=")
    assert list(blobs(f"abc{inner}xyz", unpack.Budget())) == []


@pytest.mark.parametrize(
    "pack",
    [
        lambda d: gzip.compress(d, 1),
        lambda d: bz2.compress(d, 1),
        zstandard.ZstdCompressor().compress,
    ],
)
def test_a_bomb_stops_at_the_ratio_and_is_withheld_unread(pack: object) -> None:
    value = fake_secret("sk_live_")
    data = pack(b"\0" * (64 << 20) + f"KEY={value}\n".encode())  # type: ignore[operator]
    budget = unpack.Budget()
    with pytest.raises(unpack.TooLarge):
        unpack.inflate(data, budget)
    # It stopped early: at most the free allowance or the ratio, never the whole 64 MiB.
    assert unpack.MAX_PER_STRING - budget.left <= max(unpack.FREE, unpack.RATIO * len(data))
    out, hits = _index(value).redact("data: " + base64.b64encode(data).decode())
    assert out == "data: " + UNSCREENED.placeholder()
    assert hits[0].source is UNSCREENED


def test_blobs_of_one_string_share_one_budget() -> None:
    # Many small blobs, each within the ratio, cannot add up past the string's bound.
    one = gzip.compress(bytes(range(256)) * 4096)  # 1 MiB, well under the ratio
    text = "\n".join(base64.b64encode(one).decode() for _ in range(80))
    found = list(blobs(text, unpack.Budget()))
    assert found[-1].text is None  # the budget ran out: the rest is withheld
    assert sum(b.text is not None for b in found) <= unpack.MAX_PER_STRING // (1 << 20)


def test_ordinary_compressed_data_is_read_and_left_alone() -> None:
    value = fake_secret("sk_live_")
    other = base64.b64encode(gzip.compress(b"NAME=demo\n" * 500)).decode()
    found = list(blobs(f"log: {other}", unpack.Budget()))
    assert [b.text for b in found] == ["NAME=demo\n" * 500]
    assert _index(value).redact(f"log: {other}") == (f"log: {other}", [])


def test_a_tar_gz_holding_the_file_is_withheld() -> None:
    import io
    import tarfile

    value = fake_secret("sk_live_")
    body = f"STRIPE_KEY={value}\n".encode()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("app/.env")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    run = base64.b64encode(buf.getvalue()).decode()
    run = "\n".join(run[i : i + 76] for i in range(0, len(run), 76))  # as `base64` wraps
    out, _ = _index(value).redact(f"{run}\n")
    assert out == f"{SOURCE.placeholder()}\n"


@pytest.mark.parametrize(
    "turn",
    [
        lambda t: base64.encodebytes(t.upper().encode()).decode(),  # tr a-z A-Z | base64
        lambda t: base64.b64encode(t[::-1].encode()).decode(),  # rev | base64
        lambda t: base64.b64encode(t.swapcase().encode()).decode()[::-1],  # | base64 -w0 | rev
        lambda t: base64.encodebytes(" ".join(t).encode()).decode(),  # spelled, then base64
    ],
    ids=["upper", "reversed-text", "reversed-run", "spelled"],
)
def test_base64_of_turned_text_is_read_as_text(turn: object) -> None:
    value = "Qm7" + fake_secret()[:20] + "xY4z"
    text = f"# app\nDB_PASSWORD={value}\nPORT=8080\n"
    run = turn(text)  # type: ignore[operator]
    hits = _index(value).hits(f"out:\n{run}\nend")
    assert len(hits) == 1 and hits[0].end - hits[0].start >= len(run.strip()) - 2


def test_base64_of_other_binary_data_is_not_decoded_whole() -> None:
    data = base64.b64encode(bytes(range(256)) * 400).decode()
    assert [b.text for b in blobs(data, unpack.Budget())] == []
