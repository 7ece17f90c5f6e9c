"""Chunking: spans cover a body exactly, cut at element boundaries, and re-synchronise."""

from __future__ import annotations

import itertools
import json
import os
import random

import pytest
from audit.session_kit import bodies

from gate.audit import chunks


@pytest.mark.parametrize(
    "body",
    [
        b"",
        b"x",
        os.urandom(5000),
        b'[{"a":1},{"b":2}]' * 400,
        b'},{"' * 3000,
        json.dumps([{"k": "v" * 600}] * 20).encode(),  # `}, {"` with a space
        "é€😀".encode() * 2000 + b"\xff\xfe",
    ],
)
def test_spans_cover_the_body_exactly(body: bytes) -> None:
    spans = chunks.split(body)
    assert b"".join(body[a:b] for a, b in spans) == body
    assert all(a < b for a, b in spans[:-1]) and spans[0][0] == 0
    assert all(b - a >= chunks.MIN_CHUNK for a, b in spans[:-1])


def test_cuts_fall_where_an_element_ends() -> None:
    body = json.dumps({"messages": [{"role": "user", "content": "w" * 700}] * 5}).encode()
    spans = chunks.split(body)
    assert len(spans) == 6  # five messages, then the `]}` closing the body
    assert all(body[a : a + 11] == b', {"role": ' for a, _ in spans[1:5])
    assert body[spans[-1][0] :] == b"]}"


def test_the_last_message_is_the_same_chunk_once_another_follows() -> None:
    msg = {"role": "user", "content": "q" * 600}
    turn = json.dumps(
        {"messages": [msg, msg | {"content": "z" * 600}], "model": "m"}, separators=(",", ":")
    ).encode()
    later = json.dumps(
        {"messages": [msg, msg | {"content": "z" * 600}, msg], "model": "m"}, separators=(",", ":")
    ).encode()
    pieces = {turn[a:b] for a, b in chunks.split(turn)}
    assert sum(len(later[a:b]) for a, b in chunks.split(later) if later[a:b] not in pieces) < 700


def test_a_turn_shares_almost_every_chunk_with_the_previous_one() -> None:
    """cache_control moves from one message to the next between turns (an edit well before
    the end), yet only the edited and the new elements make new chunks."""
    seq = list(bodies(30))
    before, after = seq[-2], seq[-1]
    old = {chunks.digest(before[a:b]) for a, b in chunks.split(before)}
    new = [after[a:b] for a, b in chunks.split(after) if chunks.digest(after[a:b]) not in old]
    assert sum(map(len, new)) < 0.1 * len(after)
    assert len(new) <= 4


def _full(body: bytes) -> tuple[chunks.Spans, list[bytes]]:
    spans = chunks.split(body)
    return spans, [chunks.digest(body[a:b]) for a, b in spans]


def test_reusing_the_previous_turn_gives_exactly_a_full_split() -> None:
    """split_like skips what the session's previous body shares; whatever the edit, its
    result must equal chunking from scratch."""
    rand = random.Random(5)
    seq = list(bodies(25, result_lines=15))
    cases = [
        *itertools.pairwise(seq),
        (seq[-1], seq[-1]),
        (seq[-1], seq[3]),
        (seq[3], b""),
        (b"", seq[3]),
    ]
    for _ in range(200):  # random edits: a byte flipped, cut out or put in, anywhere
        old = rand.choice(seq)
        at = rand.randrange(len(old))
        edit = rand.choice(
            [
                old[:at] + b"}" + old[at + 1 :],
                old[:at] + old[at + 7 :],
                old[:at] + b'},{"' + old[at:],
                old[:at] + b"]" + old[at:],
            ]
        )
        cases.append((old, edit))
    for old, new in cases:
        prev = (old, *_full(old))
        assert chunks.split_like(new, prev) == _full(new)


def test_refs_round_trip_and_pack_small() -> None:
    ids = [*range(1, 2001), 5, 5, 3, 10_000_000_000]
    blob = chunks.pack_refs(ids)
    assert chunks.unpack_refs(blob) == ids
    assert len(chunks.pack_refs(list(range(1, 2001)))) < 100


def test_text_of_undoes_json_escapes() -> None:
    raw = json.dumps({"t": 'line one\nline "two"\tend \u00e9 \ud83d'}).encode()
    assert chunks.text_of(raw) == '{"t": "line one\nline "two"\tend é  "}'
