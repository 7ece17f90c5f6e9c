"""Hermes: ~/.hermes/state.db (sessions and messages, with full-text index tables) and
the legacy sessions/*.json files and request dumps, under HERMES_HOME (default ~/.hermes)."""

from __future__ import annotations

from collections.abc import Iterator

from gate.history.item import Item
from gate.history.model import Agent, Form, Place, Store, Where
from gate.history.readers import Env, Notes, Reader, files, sqlite_files, when, where

_ROLES = {
    "user": Place.USER_TEXT,
    "assistant": Place.ASSISTANT_TEXT,
    "tool": Place.TOOL_RESULT,
    "system": Place.SYSTEM,
}


def stores(env: Env) -> Iterator[Store]:
    root = env.dir("HERMES_HOME", ".hermes")
    for path in sqlite_files(root, "*.db"):
        yield Store(agent=Agent.HERMES, path=path, form=Form.SQLITE)
    for path in files(root / "sessions", "*.json"):
        yield Store(agent=Agent.HERMES, path=path, form=Form.JSON, session=path.stem)


def describe(item: Item, notes: Notes) -> Where:
    doc = item.doc if isinstance(item.doc, dict) else {}
    if item.table is not None:
        session = doc.get("session_id") or (doc.get("id") if item.table == "sessions" else None)
        role = doc.get("role")
        place = _ROLES.get(str(role), Place.METADATA)
        tool = doc.get("tool_name") if isinstance(doc.get("tool_name"), str) else None
        return where(
            item,
            notes,
            place,
            tool,
            when(doc.get("timestamp") or doc.get("started_at")),
            session=session if isinstance(session, str) else None,
        )
    # Legacy session files: {"session_id", "messages": [{"role", "content"}, ...]}
    msg = doc
    if len(item.path) > 1 and item.path[0] == "messages":
        found = doc.get("messages", [])[item.path[1]] if isinstance(item.path[1], int) else {}
        msg = found if isinstance(found, dict) else {}
    place = _ROLES.get(str(msg.get("role")), Place.METADATA)
    return where(
        item,
        notes,
        place,
        ts=when(msg.get("timestamp")),
        session=doc.get("session_id") if isinstance(doc.get("session_id"), str) else None,
    )


READER = Reader(agent=Agent.HERMES, stores=stores, describe=describe)
