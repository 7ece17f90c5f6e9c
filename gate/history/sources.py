"""Every string in a store, read without writing and without disturbing its agent: JSONL
line by line (lines no screen could match are not even parsed), JSON whole, text in
blocks, SQLite through a read-only connection."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any

import ahocorasick_rs
import orjson

from gate.history import sqlite_ro
from gate.history.item import Item, strings
from gate.history.model import Form, Store
from gate.history.readers import Notes, Reader

BLOCK = 1 << 20  # text files are screened a megabyte of whole lines at a time
# (item, string): one string to screen, and where it sits.
Piece = tuple[Item, str]
_FIRST = {"session": 0, "sessions": 0, "threads": 0, "message": 1, "messages": 1}
Worth = Callable[[bytes], bool]  # could a screen match anything these bytes decode to?


def pieces(reader: Reader, store: Store, notes: Notes, worth: Worth) -> Iterator[Piece]:
    if store.form is Form.JSONL:
        yield from _jsonl(reader, store, notes, worth)
    elif store.form is Form.JSON:
        yield from _json(reader, store, notes)
    elif store.form in (Form.TEXT, Form.YAML):
        yield from _text(store, worth)
    else:
        yield from _sqlite(reader, store, notes, worth)


def _jsonl(reader: Reader, store: Store, notes: Notes, worth: Worth) -> Iterator[Piece]:
    marks = [m.encode() for m in reader.markers]
    markers = ahocorasick_rs.BytesAhoCorasick(marks) if marks else None
    with open(store.path, "rb") as f:
        for n, raw in enumerate(f, 1):
            noted = markers is not None and bool(markers.find_matches_as_indexes(raw))
            worthy = worth(raw)
            if not noted and not worthy:
                continue
            try:
                doc = orjson.loads(raw)
            except orjson.JSONDecodeError:
                # A torn last line (the agent was writing) is still screened, as text.
                line = raw.decode("utf-8", "replace")
                yield Item(store=store, line=n, doc=line, calls=notes.calls), line
                continue
            if noted:
                reader.note(doc, notes)
            if worthy:
                for path, s in strings(doc):
                    yield Item(store=store, line=n, path=path, doc=doc, calls=notes.calls), s


def _json(reader: Reader, store: Store, notes: Notes) -> Iterator[Piece]:
    raw = store.path.read_bytes()
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        text = raw.decode("utf-8", "replace")
        yield Item(store=store, doc=text), text
        return
    reader.note(doc, notes)
    for path, s in strings(doc):
        yield Item(store=store, path=path, doc=doc, calls=notes.calls), s


def _text(store: Store, worth: Worth) -> Iterator[Piece]:
    """Blocks of whole lines; each piece's item names its first line (the engine adds the
    lines up to a finding)."""
    line = 1
    with open(store.path, "rb") as f:
        rest = b""
        while chunk := f.read(BLOCK):
            data = rest + chunk
            cut = data.rfind(b"\n") + 1
            if cut == 0 and len(data) < 8 * BLOCK:
                rest = data
                continue
            block, rest = (data[:cut], data[cut:]) if cut else (data, b"")
            if worth(block):
                text = block.decode("utf-8", "replace")
                yield Item(store=store, line=line, doc=text), text
            line += block.count(b"\n")
        if rest and worth(rest):
            text = rest.decode("utf-8", "replace")
            yield Item(store=store, line=line, doc=text), text


def _sqlite(reader: Reader, store: Store, notes: Notes, worth: Worth) -> Iterator[Piece]:
    with sqlite_ro.open_ro(store.path) as db:
        # Sessions, then messages, then the rest: later rows are described with what the
        # earlier ones said (a part's role is its message's, a session's directory).
        for table in sorted(
            sqlite_ro.tables(db, with_fts=True), key=lambda t: _FIRST.get(t.name, len(_FIRST))
        ):
            yield from _rows(reader, store, notes, worth, db, table)


def _rows(
    reader: Reader,
    store: Store,
    notes: Notes,
    worth: Worth,
    db: sqlite3.Connection,
    table: sqlite_ro.Table,
) -> Iterator[Piece]:
    try:
        cur = db.execute(table.select())
    except sqlite3.Error:
        return  # a table this SQLite cannot read (a virtual table's module is missing)
    names = [d[0] for d in cur.description]
    for values in cur:
        rowid = values[0] if table.rowid else None
        row = dict(zip(names, values, strict=True))
        for col, value in row.items():
            text = sqlite_ro.text_of(value)
            if text is not None and text[:1] in "{[":
                with contextlib.suppress(orjson.JSONDecodeError):
                    row[col] = orjson.loads(text)
        reader.note(row, notes)
        for col in table.columns:
            text = sqlite_ro.text_of(values[names.index(col)])
            if text is None or not worth(text.encode("utf-8", "surrogatepass")):
                continue
            parsed: Any = row[col]
            found = strings(parsed) if isinstance(parsed, dict | list) else [((), text)]
            for path, piece in found:
                item = Item(
                    store=store,
                    table=table.name,
                    rowid=rowid,
                    column=col,
                    path=path,
                    doc=row,
                    calls=notes.calls,
                )
                yield item, piece
