"""Codex: rollout transcripts (archived ones, and the original items `compacted` lines
keep), the prompt log and its SQLite stores, under CODEX_HOME (default ~/.codex)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gate.history.item import Item, value_at
from gate.history.model import Agent, Form, Place, Store, Where
from gate.history.readers import Env, Notes, Reader, files, sqlite_files, when, where

_CALLS = ("function_call", "custom_tool_call", "local_shell_call", "tool_search_call")
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")
_EVENTS = {
    "user_message": Place.USER_TEXT,
    "agent_message": Place.ASSISTANT_TEXT,
    "agent_reasoning": Place.ASSISTANT_TEXT,
    "exec_command_end": Place.TOOL_RESULT,
    "exec_command_begin": Place.TOOL_INPUT,
    "patch_apply_begin": Place.TOOL_INPUT,
    "mcp_tool_call_end": Place.TOOL_RESULT,
}


def stores(env: Env) -> Iterator[Store]:
    root = env.dir("CODEX_HOME", ".codex")
    for sub in ("sessions", "archived_sessions"):
        for path in files(root / sub, "**/*.jsonl"):
            yield Store(agent=Agent.CODEX, path=path, form=Form.JSONL)
    if (root / "history.jsonl").is_file():
        yield Store(
            agent=Agent.CODEX, path=root / "history.jsonl", form=Form.JSONL, place=Place.PROMPT_LOG
        )
    for path in sqlite_files(root, "*.sqlite"):
        yield Store(agent=Agent.CODEX, path=path, form=Form.SQLITE)


def note(doc: Any, notes: Notes) -> None:
    if not isinstance(doc, dict):
        return
    payload = doc.get("payload")
    if not isinstance(payload, dict):
        return
    if doc.get("type") == "session_meta":
        notes.session = str(payload.get("id") or payload.get("session_id") or "") or None
        notes.project = payload.get("cwd") if isinstance(payload.get("cwd"), str) else None
    items = payload.get("replacement_history")
    for p in [payload, *(items if isinstance(items, list) else ())]:
        if isinstance(p, dict) and p.get("type") in _CALLS:
            notes.calls[str(p.get("call_id"))] = str(p.get("name") or p.get("type"))


def describe(item: Item, notes: Notes) -> Where:
    doc = item.doc if isinstance(item.doc, dict) else {}
    if item.table is not None:
        return _row(item, notes)
    if item.store.place is Place.PROMPT_LOG:
        return where(
            item, notes, Place.PROMPT_LOG, ts=when(doc.get("ts")), session=doc.get("session_id")
        )
    ts = when(doc.get("timestamp"))
    payload = doc.get("payload")
    path = item.path
    # A compacted line's original items: describe the item the string sits in.
    if path[:2] == ("payload", "replacement_history") and len(path) > 2:
        payload = value_at(doc, path[:3])
    if not isinstance(payload, dict):
        return where(item, notes, Place.METADATA, ts=ts)
    kind = payload.get("type")
    if kind == "message":
        role = payload.get("role")
        place = {"user": Place.USER_TEXT, "assistant": Place.ASSISTANT_TEXT}.get(
            str(role), Place.SYSTEM
        )
        return where(item, notes, place, ts=ts)
    if kind in _CALLS:
        return where(item, notes, Place.TOOL_INPUT, str(payload.get("name") or kind), ts)
    if kind in _OUTPUTS:
        return where(
            item, notes, Place.TOOL_RESULT, notes.calls.get(str(payload.get("call_id"))), ts
        )
    if kind == "reasoning":
        return where(item, notes, Place.ASSISTANT_TEXT, ts=ts)
    if kind in _EVENTS:
        return where(
            item, notes, _EVENTS[str(kind)], notes.calls.get(str(payload.get("call_id"))), ts
        )
    last = str(path[-1]) if path else ""
    if "output" in last.lower():  # an event repeating a tool's output (item_completed)
        return where(item, notes, Place.TOOL_RESULT, ts=ts)
    return where(item, notes, Place.METADATA, ts=ts)


def _row(item: Item, notes: Notes) -> Where:
    row = item.doc if isinstance(item.doc, dict) else {}
    session = row.get("thread_id") or (row.get("id") if item.table == "threads" else None)
    place = {
        "thread_items": Place.TOOL_RESULT,
        "thread_realtime_items": Place.TOOL_RESULT,
        "threads": Place.USER_TEXT,
        "logs": Place.METADATA,
    }.get(str(item.table), Place.METADATA)
    if item.table in ("thread_items", "thread_realtime_items"):
        kind = str(row.get("item_type") or "")
        place = (
            Place.USER_TEXT
            if "user" in kind
            else Place.ASSISTANT_TEXT
            if "agent" in kind or "assistant" in kind
            else Place.TOOL_RESULT
        )
    return where(
        item,
        notes,
        place,
        ts=when(row.get("created_at_ms") or row.get("created_at") or row.get("ts")),
        session=session if isinstance(session, str) else None,
        project=row.get("cwd") if isinstance(row.get("cwd"), str) else None,
        title=row.get("title") if isinstance(row.get("title"), str) else None,
    )


READER = Reader(
    agent=Agent.CODEX,
    stores=stores,
    describe=describe,
    note=note,
    markers=('"session_meta"', *(f'"{c}"' for c in _CALLS), '"compacted"'),
)
