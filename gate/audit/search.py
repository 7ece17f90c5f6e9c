"""Searching what was sent: full-text (FTS5 over distinct chunks) and by a caller's matcher
(`--value-of`), each hit mapped back to the requests that carried it."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gate.audit import chunks, fulltext, index

if TYPE_CHECKING:
    from gate.audit.store import AuditStore

# Tokens as FTS5's unicode61 tokenizer cuts them (letters and digits; `_` separates).
_WORD = re.compile(r"[^\W_]+")
_SNIPPET = 60  # characters of context either side of a hit


@dataclass(frozen=True, slots=True)
class Found:
    chunk: int
    requests: tuple[int, ...]  # every request in the window that sent this chunk, in order
    snippet: str
    what: str = ""  # for --value-of: which value (never the value itself)

    def to_json(self, meta: dict[int, dict[str, Any]]) -> dict[str, Any]:
        first = meta[self.requests[0]]
        return {
            "chunk": self.chunk,
            "first_request": self.requests[0],
            "ts": first["ts"],
            "agent": first["agent"],
            "upstream": first["upstream"],
            "model": first["model"],
            "requests": list(self.requests),
            "snippet": self.snippet,
            **({"value": self.what} if self.what else {}),
        }


def text_search(
    store: AuditStore, text: str, since: float | None = None, limit: int = 50
) -> list[Found]:
    """Chunks holding `text` (case-insensitive, any run of whitespace matching any other),
    as sent since then. FTS5 narrows the chunks to those holding every word of it (the index
    keeps no positions, which keeps it small); the text is then confirmed in each chunk,
    which also gives the snippet."""
    words = _WORD.findall(text)
    if not words:
        raise ValueError(f"nothing to search for in {text!r}: give at least one word")
    db = store.conn()
    index.index_pending(db)  # chunks a killed or busy gate left unindexed
    candidates = fulltext.match(db, words)
    phrase = re.compile(r"\s+".join(re.escape(part) for part in text.split()), re.I)
    found: dict[int, str] = {}
    for cid, raw in store.chunk_data(sorted(candidates)).items():
        if m := phrase.search(chunks.text_of(raw)):
            found[cid] = _snippet(m.string, m.start(), m.end() - m.start())
    return _locate(store, found, since, limit)


def scan(
    store: AuditStore,
    match: Callable[[str], list[tuple[int, int, str]]],
    since: float | None = None,
    limit: int = 50,
) -> list[Found]:
    """Every chunk sent since then, as raw JSON text, through `match`, which returns (start,
    end, label) hits: one Found per chunk and label, so each value is answered for even
    when another shares its chunk. For `--value-of`: the encoded forms it looks for include
    JSON's."""
    ids = sorted(_window(store, since)[1])
    snippets: dict[int, dict[str, str]] = {}
    for i in range(0, len(ids), 500):
        for cid, raw in store.chunk_data(ids[i : i + 500]).items():
            text = raw.decode("utf-8", "replace")
            hits = match(text)
            for n, (_start, _end, label) in enumerate(hits):
                if label not in snippets.get(cid, {}):
                    snippets.setdefault(cid, {})[label] = _masked(text, hits, n)
    firsts = {cid: next(iter(labels.values())) for cid, labels in snippets.items()}
    out = [
        Found(f.chunk, f.requests, snippet, label)
        for f in _locate(store, firsts, since, 1 << 30)
        for label, snippet in snippets[f.chunk].items()
    ]
    return out[:limit]


def _locate(
    store: AuditStore, found: dict[int, str], since: float | None, limit: int
) -> list[Found]:
    """Which requests in the window carried each chunk (a chunk is resent every turn)."""
    carriers: dict[int, list[int]] = {cid: [] for cid in found}
    for rid, refs in _window(store, since)[0]:
        for cid in set(refs) & carriers.keys():
            carriers[cid].append(rid)
    hits = [Found(cid, tuple(rids), found[cid]) for cid, rids in carriers.items() if rids]
    hits.sort(key=lambda f: f.requests[0])
    return hits[:limit]


def _window(store: AuditStore, since: float | None) -> tuple[list[tuple[int, list[int]]], set[int]]:
    rows = []
    every: set[int] = set()
    for rid, blob in store.conn().execute(
        "SELECT id, chunk_refs FROM requests WHERE ts >= ? AND chunk_refs IS NOT NULL ORDER BY id",
        (since or 0.0,),
    ):
        refs = chunks.unpack_refs(blob)
        rows.append((rid, refs))
        every.update(refs)
    return rows, every


def _masked(text: str, hits: list[tuple[int, int, str]], n: int) -> str:
    """The snippet around hits[n] with every hit masked, its neighbours too: a value from a
    secrets file is never printed, even from the audit."""
    out: list[str] = []
    at = pos = length = 0
    for start, end, label in sorted(hits):
        if start < at:
            continue  # overlapping: the hit before masks this one
        out.append(text[at:start])
        mask = f"[{end - start} chars]"
        if (start, end, label) == hits[n] or not length:
            pos, length = sum(map(len, out)), len(mask)
        out.append(mask)
        at = end
    out.append(text[at:])
    return _snippet("".join(out), pos, length, bracket=False)


def _snippet(text: str, start: int, length: int, bracket: bool = True) -> str:
    """Context around a hit, the hit in [brackets] (already there when masked)."""
    lo, hi = max(0, start - _SNIPPET), min(len(text), start + length + _SNIPPET)
    hit = text[start : start + length]
    hit = f"[{hit}]" if bracket else hit
    left = ("…" if lo else "") + text[lo:start]
    right = text[start + length : hi] + ("…" if hi < len(text) else "")
    return re.sub(r"\s+", " ", left + hit + right)
