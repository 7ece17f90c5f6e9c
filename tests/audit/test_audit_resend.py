"""A resent body's row reuses the session's previous turn (its spans, hashes, chunk ids and
delta-coded refs) for the prefix they share: what is stored must be exactly what a store
with no memory of earlier turns stores, whatever happens between turns."""

from __future__ import annotations

import json
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import pytest
from audit.session_kit import _WORDS
from audit_rows import messages_row

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.audit import blocks, chain, chunks, index, retention
from gate.audit.store import AuditError, AuditStore
from gate.proxy.server import Listening


def record(store: AuditStore, body: bytes, session: str | None, ts: float, **extra: Any) -> int:
    return store.record_request(
        messages_row(body, session=session, ts=ts, **extra),
    )


def text(rand: random.Random) -> str:
    return " ".join(rand.choices(_WORDS, k=rand.choice([3, 40, 150, 600])))


def turns(rand: random.Random, n: int) -> Iterator[bytes]:
    """A conversation edited the ways agents (and odd clients) edit it between turns: new
    messages (some large), `cache_control` moved, a block near the end or in the middle
    rewritten, messages dropped from the end, the same body again, a byte flipped."""
    msgs: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": text(rand)}]}
    ]
    for _ in range(n):
        op = rand.choice(
            ["turn", "turn", "turn", "cache", "end", "middle", "shrink", "same", "byte", "big"]
        )
        if op == "big":  # a block over blocks.INLINE: written raw, packed by the worker
            msgs.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": " ".join(text(rand) for _ in range(80))}],
                }
            )
        elif op == "turn":
            msgs += [
                {
                    "role": r,
                    "content": [
                        {"type": "text", "text": text(rand)} for _ in range(rand.randint(1, 3))
                    ],
                }
                for r in ("assistant", "user")
            ]
        elif op == "cache":
            for m in msgs:
                m["content"][-1].pop("cache_control", None)
            rand.choice(msgs)["content"][-1]["cache_control"] = {"type": "ephemeral"}
        elif op in ("end", "middle"):
            at = len(msgs) - 1 if op == "end" else rand.randrange(len(msgs))
            msgs[at]["content"][0]["text"] = text(rand)
        elif op == "shrink" and len(msgs) > 3:
            del msgs[rand.randint(1, len(msgs) - 1) :]
        body = json.dumps(
            {"model": "m", "system": "s " * 300, "messages": msgs, "stream": True},
            separators=(",", ":"),
        ).encode()
        if op == "byte":
            at = rand.randrange(len(body))
            body = body[:at] + rand.choice([b"}", b"]", b'},{"', b"x"]) + body[at + 1 :]
        yield body


def stored(db: sqlite3.Connection) -> tuple[list[Any], list[Any], list[Any]]:
    """Every byte the audit's tables hold about requests and chunks."""
    return (
        [
            tuple(r)
            for r in db.execute(
                "SELECT id, session, chunk_refs, body_digest, prev_hash, record_hash"
                " FROM requests ORDER BY id"
            )
        ],
        [
            tuple(r)
            for r in db.execute("SELECT id, hash, block, start, size FROM chunks ORDER BY id")
        ],
        # Packed or not yet (the background pass runs when it runs): the same bytes.
        [
            (r[0], chunks.stored(r[1], r[2]))
            for r in db.execute("SELECT id, codec, data FROM blocks ORDER BY id")
        ],
    )


def reused(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many leading chunk ids each write took from the previous turn (a spy: the real
    blocks.store still runs)."""
    seen: list[int] = []
    real = blocks.store

    def spy(*args: Any) -> Any:
        seen.append(len(args[5] or []) if len(args) > 5 else 0)
        return real(*args)

    monkeypatch.setattr(blocks, "store", spy)
    return seen


@pytest.mark.parametrize(("cache_max", "mark"), [(200_000, 64), (3, 2)])
def test_many_random_turns_store_exactly_what_a_store_without_memory_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cache_max: int, mark: int
) -> None:
    """Two sessions and session-less writes interleaved, the background pass (packing,
    indexing) now and then; the hash → id cache tiny or not, the body digest's saved states
    sparse or dense. Each body is also written by a store opened for that one write (no
    previous turn, no cache): the tables must match."""
    monkeypatch.setattr("gate.audit.store._CACHE_MAX", cache_max)
    monkeypatch.setattr(chunks, "_MARK", mark)
    seen = reused(monkeypatch)
    rand = random.Random(7)
    sessions = {"s:a": list(turns(random.Random(1), 60)), "s:b": list(turns(random.Random(2), 60))}
    slots = [s for s in sessions for _ in range(60)]
    rand.shuffle(slots)  # a random interleaving, each session's turns in order
    writes: list[tuple[str | None, bytes]] = [(s, sessions[s].pop(0)) for s in slots]
    writes[10:10] = [(None, writes[9][1]), (None, writes[3][1])]
    fast = AuditStore(tmp_path / "fast.db")
    for n, (session, body) in enumerate(writes):
        record(fast, body, session, ts=1000.0 + n)
        if rand.random() < 0.2:
            index.index_pending(fast.conn())
        plain = AuditStore(tmp_path / "plain.db")
        record(plain, body, session, ts=1000.0 + n)
        plain.close()
    assert sum(1 for k in seen[::2] if k > 0) > 60  # the fast path was taken, mostly
    assert any(
        len(chunks.unpack(data)) > blocks.INLINE
        for (data,) in fast.conn().execute("SELECT data FROM blocks WHERE codec='zstd'")
    )  # written raw, packed between turns
    assert stored(fast.conn()) == stored(AuditStore(tmp_path / "plain.db").conn())
    for n, (_, body) in enumerate(writes):
        assert fast.body_of(n + 1) == body
    assert chain.verify(fast.conn()).ok


@pytest.mark.parametrize("mark", [1, 3, 64])
def test_a_resumed_body_digest_is_the_body_digest(
    monkeypatch: pytest.MonkeyPatch, mark: int
) -> None:
    monkeypatch.setattr(chunks, "_MARK", mark)
    rand = random.Random(9)
    hashes: list[bytes] = []
    marks: list[Any] = []
    for _ in range(300):
        keep = rand.randint(0, len(hashes))
        hashes = hashes[:keep] + [rand.randbytes(32) for _ in range(rand.randint(0, 150))]
        got, marks = chunks.resumed_digest(hashes, marks, keep)
        assert got == chunks.body_digest(hashes)


def test_shared_is_the_longest_common_prefix() -> None:
    rand = random.Random(3)
    stride = 64 << 10
    base = bytes(rand.getrandbits(8) for _ in range(3 * stride + 17))
    cases = [(b"", b""), (base, b""), (base, base), (base, base[:-1]), (base[:5], base)]
    for at in [
        0,
        1,
        stride - 1,
        stride,
        stride + 1,
        2 * stride,
        len(base) - 1,
        *(rand.randrange(len(base)) for _ in range(30)),
    ]:
        other = base[:at] + bytes([base[at] ^ 1]) + base[at + 1 :]
        cases += [(base, other), (other, base), (base, other[: at + 1]), (base[:at], base)]
    for x, y in cases:
        want = next((i for i in range(min(len(x), len(y))) if x[i] != y[i]), min(len(x), len(y)))
        assert chunks.shared(x, y) == want


def test_chunks_pruned_between_two_turns_are_not_reused(tmp_path: Path) -> None:
    """Retention deletes every chunk the previous turn used (from another store, as
    `gate audit prune` would); the next turn resends that prefix: its chunks are stored
    again, with new ids, and read back exactly."""
    store = AuditStore(tmp_path / "audit.db")
    sent = list(turns(random.Random(4), 12))
    for n, body in enumerate(sent[:-1]):
        record(store, body, "s:1", ts=1000.0 + n)
    old_ids = set(store.chunk_ids(len(sent) - 1))
    other = AuditStore(tmp_path / "audit.db")
    assert retention.prune(other, now=1000.0 + 400 * 86400).requests == len(sent) - 1
    db = store.conn()
    assert not old_ids & {cid for (cid,) in db.execute("SELECT id FROM chunks")}
    rid = record(store, sent[-1], "s:1", ts=2e9)
    assert store.body_of(rid) == sent[-1]
    assert chain.verify(db).ok


def test_a_prune_that_keeps_the_previous_turn_changes_nothing_stored(tmp_path: Path) -> None:
    """Pruning an old session changes the chunk generation; the live session's next turn
    then looks its chunks up again (same ids) and its row equals a store's without memory."""
    store = AuditStore(tmp_path / "audit.db")
    for n, body in enumerate(turns(random.Random(5), 6)):
        record(store, body, "s:old", ts=1000.0 + n)
    live = list(turns(random.Random(6), 8))
    now = 1000.0 + (store.settings.retention_days + 1) * 86400
    for n, body in enumerate(live[:-1]):
        record(store, body, "s:live", ts=now + n)
    pruned = retention.prune(store, now=now)
    assert pruned.requests == 6 and pruned.chunks > 0
    rid = record(store, live[-1], "s:live", ts=now + 10)
    refs = store.chunk_ids(rid)
    again = AuditStore(tmp_path / "audit.db")  # no previous turn, no cache
    rid2 = record(again, live[-1], "s:live", ts=now + 10)
    assert again.chunk_ids(rid2) == refs and store.body_of(rid) == live[-1]
    assert chain.verify(store.conn()).ok


def test_ids_of_a_rolled_back_turn_are_never_reused(tmp_path: Path) -> None:
    """Turn 2 fails after its new chunks were inserted (rolled back); session-less writes
    then take those very ids for other chunks; turn 3 resends turn 2's prefix: it must not
    take turn 2's ids. Everything stored equals what a store without memory stores."""

    def body(*texts: str) -> bytes:
        return json.dumps(
            {"model": "m", "messages": [{"role": "user", "content": t} for t in texts]}
        ).encode()

    first = [" ".join(random.Random(k).choices(_WORDS, k=150)) for k in range(4)]
    sent = [body(*first), body(*first, "q" * 900, "short"), body(*first, "q" * 900, "r" * 900)]
    other = json.dumps([{"x": "z" * 2000}, {"y": "w" * 2000}]).encode()
    stores = [AuditStore(tmp_path / "fast.db"), AuditStore(tmp_path / "plain.db")]
    for store in stores:
        store.conn().execute(
            "CREATE TRIGGER boom BEFORE INSERT ON requests WHEN"
            " NEW.model = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END"
        )
    fast, plain = stores
    record(fast, sent[0], "s:1", ts=1.0)
    with pytest.raises(AuditError, match="boom"):
        record(fast, sent[1], "s:1", ts=2.0, model="boom")
    record(fast, other, None, ts=3.0)
    record(fast, sent[2], "s:1", ts=4.0)
    for body, session, ts in ((sent[0], "s:1", 1.0), (other, None, 3.0), (sent[2], "s:1", 4.0)):
        record(plain, body, session, ts)
        plain.close_thread()
        plain = AuditStore(tmp_path / "plain.db")
    assert fast.body_of(3) == sent[2]
    assert stored(fast.conn()) == stored(plain.conn())


@pytest.mark.parametrize("sep", [",", ", "])
def test_an_edit_in_the_bytes_that_decide_a_cut_is_seen(sep: str) -> None:
    """A cut after `}` depends on the bytes after it (`,{"`, `, {"` or `]`): a body that
    differs only there must not keep the span that ends at that cut."""
    body = json.dumps([{"k": "v" * 600}] * 4, separators=(sep, ":")).encode()
    spans = chunks.split(body)
    prev = (body, spans, [chunks.digest(body[a:b]) for a, b in spans])
    assert len(spans) == 5  # four elements, then the closing `]`
    for _, end in spans[:-1]:
        for at in range(end - 2, end + 6):
            for byte in b'x"{ ,]':
                new = body[:at] + bytes([byte]) + body[at + 1 :]
                full = chunks.split(new)
                assert chunks.split_like(new, prev) == (
                    full,
                    [chunks.digest(new[a:b]) for a, b in full],
                )


def test_a_real_gate_records_each_resent_turn_as_the_provider_got_it(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """An SDK client resends a growing conversation through a real gate, `cache_control`
    moving to the newest message as Claude Code does, and a second session interleaved:
    every row reads back as the bytes the provider received, and the chain verifies."""
    rand = random.Random(11)
    chats: dict[str, list[Any]] = {"one": [], "two": []}
    clients = {
        sid: closed_after_test(
            anthropic.Anthropic(
                base_url=f"{gate.base_url}/anthropic",
                api_key="sk-ant-test",
                max_retries=0,
                default_headers={"x-claude-code-session-id": sid},
            )
        )
        for sid in chats
    }
    for _ in range(30):
        sid = rand.choice(["one", "one", "two"])
        messages = chats[sid]
        for m in messages:
            m["content"][-1].pop("cache_control", None)
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": text(rand), "cache_control": {"type": "ephemeral"}}
                ],
            }
        )
        reply = clients[sid].messages.create(model="claude-cli", max_tokens=8, messages=messages)
        messages.append(
            {"role": "assistant", "content": [{"type": "text", "text": reply.content[0].text}]}
        )
    store = AuditStore(gate_dirs["data"] / "audit.db")
    rows = sorted(r["id"] for r in store.rows(100, body=False) if r["model"] == "claude-cli")
    sent = [seen.body for seen in provider.seen if seen.path == "/v1/messages"]
    assert len(sent) == 30 and [store.body_of(r) for r in rows] == sent
    assert chain.verify(store.conn()).ok
