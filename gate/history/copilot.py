"""GitHub Copilot CLI: session-state/<id>/events.jsonl (its workspace.yaml names the
project), legacy flat <id>.jsonl, the session store database and logs, under ~/.copilot."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gate.history.item import Item, value_at
from gate.history.model import Agent, Form, Place, Store, Where
from gate.history.readers import Env, Notes, Reader, files, sqlite_files, when, where

_YAML_FIELD = re.compile(r"^(cwd|name|id):\s*(.*?)\s*$", re.M)
_EVENTS = {
    "user.message": Place.USER_TEXT,
    "assistant.message": Place.ASSISTANT_TEXT,
    "assistant.message_delta": Place.ASSISTANT_TEXT,
    "system.message": Place.SYSTEM,
    "tool.execution_start": Place.TOOL_INPUT,
    "tool.execution_partial_result": Place.TOOL_RESULT,
    "tool.execution_complete": Place.TOOL_RESULT,
}


def stores(env: Env) -> Iterator[Store]:
    root = env.dir("COPILOT_HOME", ".copilot")
    state = root / "session-state"
    for path in files(state, "*/events.jsonl"):
        meta = _workspace(path.parent / "workspace.yaml")
        yield Store(
            agent=Agent.COPILOT,
            path=path,
            form=Form.JSONL,
            session=meta.get("id") or path.parent.name,
            project=meta.get("cwd"),
            title=meta.get("name"),
        )
        # Its `name` is the first prompt, pasted tokens and all.
        yield Store(
            agent=Agent.COPILOT,
            path=path.parent / "workspace.yaml",
            form=Form.YAML,
            session=meta.get("id") or path.parent.name,
            project=meta.get("cwd"),
            place=Place.USER_TEXT,
        )
    for path in files(state, "*.jsonl"):
        yield Store(agent=Agent.COPILOT, path=path, form=Form.JSONL, session=path.stem)
    for path in sqlite_files(root, "*.db"):
        yield Store(agent=Agent.COPILOT, path=path, form=Form.SQLITE)
    for path in files(root / "logs", "*.log"):
        yield Store(agent=Agent.COPILOT, path=path, form=Form.TEXT, place=Place.METADATA)


def _workspace(path: Path) -> dict[str, str]:
    """The few top-level scalars of workspace.yaml that name the session (read as text:
    values are plain scalars, and a damaged file must not stop the scan)."""
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return {}
    return {k: v.strip("'\"") for k, v in _YAML_FIELD.findall(text)}


def note(doc: Any, notes: Notes) -> None:
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, dict):
        return
    if doc.get("type") == "tool.execution_start":
        notes.calls[str(data.get("toolCallId"))] = str(data.get("toolName"))
    if doc.get("type") == "session.start" and isinstance(data.get("sessionId"), str):
        notes.session = data["sessionId"]


def describe(item: Item, notes: Notes) -> Where:
    doc = item.doc if isinstance(item.doc, dict) else {}
    if item.store.place is not None:
        return where(item, notes, item.store.place)
    if item.table is not None:
        place = {
            "turns": Place.USER_TEXT,
            "search_index": Place.METADATA,
            "checkpoints": Place.ASSISTANT_TEXT,
        }.get(str(item.table), Place.METADATA)
        if item.table == "turns" and item.column == "assistant_response":
            place = Place.ASSISTANT_TEXT
        sid = doc.get("session_id")
        return where(
            item,
            notes,
            place,
            ts=when(doc.get("timestamp") or doc.get("created_at")),
            session=sid if isinstance(sid, str) else None,
            project=doc.get("cwd") if isinstance(doc.get("cwd"), str) else None,
        )
    kind = str(doc.get("type"))
    ts = when(doc.get("timestamp"))
    place = _EVENTS.get(kind, Place.METADATA)
    data = doc.get("data")
    data = data if isinstance(data, dict) else {}
    tool = None
    if kind == "assistant.message" and "toolRequests" in item.path:
        place = Place.TOOL_INPUT
        tool = value_at(doc, (*item.path[:3], "name"))
    elif place in (Place.TOOL_INPUT, Place.TOOL_RESULT):
        tool = data.get("toolName") or notes.calls.get(str(data.get("toolCallId")))
    return where(item, notes, place, tool if isinstance(tool, str) else None, ts)


READER = Reader(
    agent=Agent.COPILOT,
    stores=stores,
    describe=describe,
    note=note,
    markers=('"tool.execution_start"', '"session.start"'),
)
