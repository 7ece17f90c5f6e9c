"""Cursor: agent transcripts (role + message blocks, JSONL) under
~/.cursor/projects/<project>/agent-transcripts/, and each chat's store.db (meta and JSON
blobs) under ~/.cursor/chats/<md5 of the project path>/<id>/."""

from __future__ import annotations

from collections.abc import Iterator

from gate.history.item import Item, value_at
from gate.history.model import Agent, Form, Place, Store, Where
from gate.history.readers import Env, Notes, Reader, files, where


def stores(env: Env) -> Iterator[Store]:
    root = env.dir("CURSOR_CONFIG_DIR", ".cursor")
    for path in files(root / "projects", "*/agent-transcripts/**/*.jsonl"):
        yield Store(agent=Agent.CURSOR, path=path, form=Form.JSONL, session=path.stem)
    for path in files(root / "chats", "*/*/store.db"):
        yield Store(agent=Agent.CURSOR, path=path, form=Form.SQLITE, session=path.parent.name)


def describe(item: Item, notes: Notes) -> Where:
    doc = item.doc if isinstance(item.doc, dict) else {}
    if item.table is not None:
        # A blob is one JSON message; its role says whose words they were.
        data = doc.get("data")
        role = value_at(data, ("role",)) if isinstance(data, dict) else None
        return where(item, notes, _place(role, item.path))
    return where(item, notes, _place(doc.get("role"), item.path))


def _place(role: object, path: tuple[object, ...]) -> Place:
    if "tool_result" in path or role == "tool":
        return Place.TOOL_RESULT
    if "tool_use" in path or "input" in path:
        return Place.TOOL_INPUT
    return {"user": Place.USER_TEXT, "assistant": Place.ASSISTANT_TEXT, "system": Place.SYSTEM}.get(
        str(role), Place.METADATA
    )


READER = Reader(agent=Agent.CURSOR, stores=stores, describe=describe)
