"""OpenCode: opencode.db (session, message and part rows, its WAL too) and the legacy
storage/ JSON files, under $XDG_DATA_HOME/opencode (default ~/.local/share/opencode)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gate.history.item import Item, first, value_at
from gate.history.model import Agent, Form, Place, Store, Where
from gate.history.readers import Env, Notes, Reader, files, sqlite_files, when, where


def stores(env: Env) -> Iterator[Store]:
    data = env.environ.get("XDG_DATA_HOME")
    root = (env.dir("XDG_DATA_HOME") if data else env.home / ".local" / "share") / "opencode"
    for path in sqlite_files(root, "*.db"):
        yield Store(agent=Agent.OPENCODE, path=path, form=Form.SQLITE)
    for path in files(root / "storage", "**/*.json"):
        yield Store(agent=Agent.OPENCODE, path=path, form=Form.JSON)


def note(doc: Any, notes: Notes) -> None:
    """Rows arrive session, then message, then part: a part's role is its message's."""
    if isinstance(doc, dict) and isinstance(doc.get("id"), str):
        data = doc.get("data")
        role = value_at(data, ("role",)) if isinstance(data, dict) else doc.get("role")
        if isinstance(role, str):
            notes.roles[doc["id"]] = role
        if doc.get("directory") and doc.get("title") is not None:  # a session row or file
            notes.roles[f"session:{doc['id']}"] = str(doc["directory"])
            notes.roles[f"title:{doc['id']}"] = str(doc["title"])


def describe(item: Item, notes: Notes) -> Where:
    row = item.doc if isinstance(item.doc, dict) else {}
    data = row.get("data") if item.table is not None else row
    data = data if isinstance(data, dict) else {}
    if isinstance(data.get("part"), dict):  # an event row repeating a part
        data = data["part"]
    session = (
        first(row, ("session_id",), ("sessionID",))
        or data.get("sessionID")
        or (row.get("id") if item.table == "session" else None)
    )
    session = session if isinstance(session, str) else None
    known = {
        "session": session,
        "project": notes.roles.get(f"session:{session}"),
        "title": notes.roles.get(f"title:{session}"),
    }
    ts = when(first(row, ("time_created",), ("time", "created"), ("time", "start")))
    kind = data.get("type")
    if kind == "tool":
        place = Place.TOOL_INPUT if "input" in item.path[:3] else Place.TOOL_RESULT
        return where(item, notes, place, str(data.get("tool")), ts, **known)
    if kind in ("text", "reasoning"):
        message = first(row, ("message_id",), ("messageID",))
        role = notes.roles.get(str(message))
        place = Place.USER_TEXT if role == "user" else Place.ASSISTANT_TEXT
        return where(item, notes, place, ts=ts, **known)
    if kind in ("file", "snapshot", "patch"):
        return where(item, notes, Place.FILE_BACKUP, ts=ts, **known)
    if item.table == "session_input":
        return where(item, notes, Place.USER_TEXT, ts=ts, **known)
    return where(item, notes, Place.METADATA, ts=ts, **known)


READER = Reader(agent=Agent.OPENCODE, stores=stores, describe=describe, note=note)
