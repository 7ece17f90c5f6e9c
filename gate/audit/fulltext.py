"""The full-text index over distinct chunks, on either engine: SQLite's FTS5 (contentless,
no positions) or a PostgreSQL tsvector of the chunk's words (GIN-indexed).

Both only narrow the chunks a search reads: search.py confirms the text in each
candidate, so the engines give the same hits as long as each returns every chunk holding
all the words. On PostgreSQL the words are cut here, as FTS5's unicode61 cuts them
(letters and digits), and folded to lower case, so neither its parser (which keeps
`api.example.com` as one host token) nor a dictionary can drop a candidate.
"""

from __future__ import annotations

import re
from typing import Any

_WORD = re.compile(r"[^\W_]+")
_LEXEME = 2046  # PostgreSQL's longest lexeme, in bytes
_VECTOR = 900 << 10  # under its 1 MB tsvector limit; a chunk with more is always a candidate


def _is_pg(db: Any) -> bool:
    return getattr(db, "dialect", "sqlite") == "postgresql"


def words(text: str) -> list[str]:
    """Distinct folded words of `text` PostgreSQL can hold (a longer one is left out of the
    chunk and the query alike, so it narrows nothing)."""
    out = {w.lower() for w in _WORD.findall(text)}
    return sorted(w for w in out if len(w.encode()) <= _LEXEME)


def add(db: Any, cid: int, text: str) -> None:
    """Index one chunk (inside the caller's transaction)."""
    if not _is_pg(db):
        db.execute("INSERT INTO chunk_text (rowid, text) VALUES (?, ?)", (cid, text))
        return
    found = words(text)
    # Too many words for one tsvector: NULL, which every search reads.
    vector = found if sum(len(w.encode()) + 8 for w in found) < _VECTOR else None
    db.execute(
        "INSERT INTO chunk_text (rowid, words) VALUES (?, array_to_tsvector(?))"
        " ON CONFLICT (rowid) DO NOTHING",
        (cid, vector),
    )


def forget(db: Any, cid: int, text: str) -> None:
    """Remove one chunk from the index. A contentless FTS5 table deletes by being given the
    text it indexed."""
    if not _is_pg(db):
        db.execute(
            "INSERT INTO chunk_text (chunk_text, rowid, text) VALUES ('delete', ?, ?)", (cid, text)
        )
        return
    db.execute("DELETE FROM chunk_text WHERE rowid = ?", (cid,))


def match(db: Any, terms: list[str]) -> set[int]:
    """The chunks that may hold every one of `terms` (words as search.py cut them)."""
    if not _is_pg(db):
        query = " AND ".join('"' + w.replace('"', '""') + '"' for w in terms)
        return {
            cid
            for (cid,) in db.execute(
                "SELECT rowid FROM chunk_text WHERE chunk_text MATCH ?", (query,)
            )
        }
    wanted = words(" ".join(terms))
    # Words are letters and digits only: quoted as lexemes, nothing to escape.
    query = " & ".join(f"'{w}'" for w in wanted)
    sql = "SELECT rowid FROM chunk_text WHERE words IS NULL"
    return {
        cid
        for (cid,) in db.execute(
            sql + (" OR words @@ ?::tsquery" if query else ""), (query,) if query else ()
        )
    }
