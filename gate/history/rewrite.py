"""Replacing values in a store in place, keeping it valid for its agent: JSONL stays one
JSON object per line with every other byte as it was, JSON stays parseable, SQLite passes
integrity_check with its full-text indexes rebuilt and no old copy in free pages or the WAL."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from gate.history import sqlite_ro
from gate.history.item import strings
from gate.history.model import Form

Pairs = list[tuple[bytes, bytes]]


def forms(values: Mapping[str, str]) -> Pairs:
    """Each value as it can sit in a file (as is, JSON-escaped, JSON in a JSON string,
    \\u-escaped) with its placeholder in the same form, longest first."""
    out: dict[bytes, bytes] = {}
    for value, tag in values.items():
        v, t = value, tag
        for _ in range(3):
            out.setdefault(v.encode("utf-8", "surrogatepass"), t.encode())
            v, t = json.dumps(v)[1:-1], json.dumps(t)[1:-1]
        out.setdefault(
            json.dumps(value, ensure_ascii=True)[1:-1].encode(),
            json.dumps(tag, ensure_ascii=True)[1:-1].encode(),
        )
    return sorted(out.items(), key=lambda p: -len(p[0]))


def substitute(data: bytes, pairs: Pairs) -> bytes:
    for old, new in pairs:
        if old in data:
            data = data.replace(old, new)
    return data


def rewrite(path: Path, form: Form, values: Mapping[str, str]) -> int:
    """Replace every copy of every value; how many lines, rows or files changed."""
    pairs = forms(values)
    if form is Form.SQLITE:
        return _sqlite(path, pairs)
    data = path.read_bytes()
    if form is Form.JSONL:
        lines = data.splitlines(keepends=True)
        changed = 0
        for i, raw in enumerate(lines):
            new = substitute(raw, pairs)
            if new == raw and b"\\u" in raw:
                new = _escaped(raw, values)
            if new != raw:
                lines[i] = _valid_line(raw, new, values)
                changed += 1
        if changed:
            _replace(path, b"".join(lines))
        return changed
    if form is Form.YAML:
        new = _yaml(data, values)
        if new != data:
            _replace(path, new)
        return int(new != data)
    new = substitute(data, pairs)
    if form is Form.JSON and new != data:
        try:
            orjson.loads(new)
        except orjson.JSONDecodeError:
            new = _redump(data, values) + (b"\n" if data.endswith(b"\n") else b"")
    if new != data:
        _replace(path, new)
        return 1
    return 0


def _escaped(raw: bytes, values: Mapping[str, str]) -> bytes:
    """A line whose strings hold a value only once their \\u escapes are decoded."""
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw
    if not any(v in s for _, s in strings(doc) for v in values):
        return raw
    return _redump(raw, values) + raw[len(raw.rstrip(b"\r\n")) :]


_YAML_LINE = re.compile(rb"^(\s*[\w.-]+:[ \t]+)(.*?)(\r?\n?)$", re.S)


def _yaml(data: bytes, values: Mapping[str, str]) -> bytes:
    """A placeholder holds ': ' and ' #', which end a plain YAML scalar: an edited value
    is written double-quoted (JSON's string syntax is YAML's), other lines as they were."""
    pairs = forms(values)
    out = []
    for line in data.splitlines(keepends=True):
        new = substitute(line, pairs)
        if new != line:
            m = _YAML_LINE.match(line)
            if m is None or m.group(2)[:1] in (b'"', b"'", b"|", b">"):
                raise ValueError("a YAML line gate cannot rewrite safely (not key: plain value)")
            value = _edit(m.group(2).decode("utf-8", "surrogateescape"), values)
            new = m.group(1) + json.dumps(value, ensure_ascii=False).encode() + m.group(3)
        out.append(new)
    return b"".join(out)


def _valid_line(raw: bytes, new: bytes, values: Mapping[str, str]) -> bytes:
    """The byte-level edit when it still parses; else the line re-encoded with each string
    edited (a value in a form the byte edit cannot see whole)."""
    try:
        orjson.loads(new)
        return new
    except orjson.JSONDecodeError:
        pass
    try:
        orjson.loads(raw)
    except orjson.JSONDecodeError:
        return new  # it was not JSON before (a torn line); the text edit is all there is
    end = raw[len(raw.rstrip(b"\r\n")) :]
    return _redump(raw, values) + end


def _redump(raw: bytes, values: Mapping[str, str]) -> bytes:
    doc = orjson.loads(raw)
    return json.dumps(_edit(doc, values), ensure_ascii=False, separators=(",", ":")).encode()


def _edit(doc: Any, values: Mapping[str, str]) -> Any:
    if isinstance(doc, str):
        for v, t in sorted(values.items(), key=lambda p: -len(p[0])):
            doc = doc.replace(v, t)
        return doc
    if isinstance(doc, dict):
        return {_edit(k, values): _edit(v, values) for k, v in doc.items()}
    if isinstance(doc, list):
        return [_edit(v, values) for v in doc]
    return doc


def _replace(path: Path, data: bytes) -> None:
    """Atomically, keeping the file's mode (the agent's own file stays the agent's)."""
    mode = path.stat().st_mode & 0o7777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _sqlite(path: Path, pairs: Pairs) -> int:
    db = sqlite3.connect(path, timeout=5.0, isolation_level=None)
    try:
        # Freed pages are zeroed, so nothing of an old row survives in the file.
        db.execute("PRAGMA secure_delete = ON")
        db.execute("BEGIN IMMEDIATE")
        changed = 0
        tables = sqlite_ro.tables(db, with_fts=True)
        for table in tables:
            if table.fts and not _owns_content(db, table.name):
                continue  # an index over another table: rebuilt from it below
            changed += _rows(db, table, pairs)
        for table in tables:
            if table.fts and _rebuildable(db, table.name):
                db.execute(
                    f"INSERT INTO {_q(table.name)}({_q(table.name)})"  # noqa: S608
                    " VALUES ('rebuild')"
                )
        db.execute("COMMIT")
        if changed:
            db.execute("VACUUM")  # no free page keeps an old copy
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # nor the WAL
        (ok,) = db.execute("PRAGMA integrity_check").fetchone()
        if ok != "ok":
            raise sqlite3.DatabaseError(f"{path}: integrity_check after redaction: {ok}")
        return changed
    except BaseException:
        if db.in_transaction:
            db.execute("ROLLBACK")
        raise
    finally:
        db.close()


def _rows(db: sqlite3.Connection, table: sqlite_ro.Table, pairs: Pairs) -> int:
    changed = 0
    edits: list[tuple[str, object, object, object]] = []
    for values in db.execute(table.select()).fetchall():
        key = values[0] if table.rowid else None
        cols = values[1:] if table.rowid else values
        for col, value in zip(table.columns, cols, strict=True):
            if isinstance(value, str):
                new: object = substitute(value.encode("utf-8", "surrogatepass"), pairs).decode(
                    "utf-8", "surrogatepass"
                )
            elif isinstance(value, bytes):
                new = substitute(value, pairs)  # a blob stays a blob
            else:
                continue
            if new != value:
                edits.append((col, new, key, value))
    for col, new, key, old in edits:
        if table.rowid:
            db.execute(
                f"UPDATE {_q(table.name)} SET {_q(col)} = ? WHERE rowid = ?",  # noqa: S608
                (new, key),
            )
        else:
            db.execute(
                f"UPDATE {_q(table.name)} SET {_q(col)} = ? WHERE {_q(col)} = ?",  # noqa: S608
                (new, old),
            )
        changed += 1
    return changed


def _options(db: sqlite3.Connection, name: str) -> str:
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).fetchone()
    return str(sql).lower().replace(" ", "")


def _owns_content(db: sqlite3.Connection, name: str) -> bool:
    return "content=" not in _options(db, name)


def _rebuildable(db: sqlite3.Connection, name: str) -> bool:
    """Contentful and external-content indexes rebuild; a contentless one has nothing to
    rebuild from."""
    opts = _options(db, name)
    return "content=''" not in opts and 'content=""' not in opts


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def leftover(paths: Iterable[Path], values: Iterable[str]) -> list[Path]:
    """Files (a database's WAL included) in which any form of any value is still present."""
    pairs = forms({v: "" for v in values})
    out = []
    for path in paths:
        for p in (path, Path(f"{path}-wal")):
            try:
                data = p.read_bytes()
            except OSError:
                continue
            if any(old in data for old, _ in pairs):
                out.append(p)
    return out
