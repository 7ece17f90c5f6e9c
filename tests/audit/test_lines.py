"""The marked lines of a stream, cut anywhere into chunks, are the lines a split of every
line would find, in order, whatever the chunking (a marker across two chunks included)."""

from __future__ import annotations

import random

import pytest

from gate.audit.lines import marked
from gate.audit.usage import UsageTap

PIECES = [b"data: ", b"sage", b"usage", b"abc", b"\n", b"\r\n", b"output_item.done", b"x" * 40]
MARKERS = [(b"sage",), (b"output_item.done", b"sage"), (b"required_action",)]


def _reference(stream: bytes, markers: tuple[bytes, ...]) -> tuple[list[bytes], bytes]:
    lines = stream.split(b"\n")
    rest = lines.pop()
    return [line for line in lines if any(m in line for m in markers)], rest


def _chunked(stream: bytes, rng: random.Random) -> list[bytes]:
    cuts = sorted(rng.sample(range(len(stream) + 1), min(len(stream) + 1, rng.randint(0, 12))))
    return [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]


@pytest.mark.parametrize("seed", range(200))
def test_marked_lines_match_a_full_split(seed: int) -> None:
    rng = random.Random(seed)
    stream = b"".join(rng.choice(PIECES) for _ in range(rng.randint(0, 40)))
    markers = MARKERS[seed % len(MARKERS)]
    found: list[bytes] = []
    pending = b""
    for chunk in _chunked(stream, rng):
        lines, pending = marked(pending, chunk, markers)
        found += lines
    assert (found, pending) == _reference(stream, markers)


def test_a_usage_line_cut_across_chunks_is_read() -> None:
    event = b'data: {"type":"message_delta","usage":{"output_tokens":7}}\n\n'
    stream = b'data: {"type":"content_block_delta","delta":{"text":"hi"}}\n\n' * 50 + event
    tap = UsageTap("text/event-stream")
    for i in range(0, len(stream), 13):
        tap.feed(stream[i : i + 13])
    assert tap.finish().output_tokens == 7
