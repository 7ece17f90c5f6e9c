"""Claude Code: project transcripts (and subagents'), tool output caches, file backups and
the prompt log, under CLAUDE_CONFIG_DIR (default ~/.claude)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gate.history.item import Item, value_at
from gate.history.model import Agent, Form, Place, Store, Where
from gate.history.readers import Env, Notes, Reader, files, when, where


def stores(env: Env) -> Iterator[Store]:
    root = env.dir("CLAUDE_CONFIG_DIR", ".claude")
    projects = root / "projects"
    for path in files(projects, "**/*"):
        if ".jsonl" in path.name:  # <session>.jsonl, subagents/agent-<id>.jsonl, .orphaned-N
            yield Store(
                agent=Agent.CLAUDE_CODE,
                path=path,
                form=Form.JSONL,
                session=path.name.split(".jsonl")[0],
            )
        elif "tool-results" in path.relative_to(projects).parts:
            yield Store(agent=Agent.CLAUDE_CODE, path=path, form=Form.TEXT, place=Place.TOOL_RESULT)
    for path in files(root / "file-history", "*/*"):
        yield Store(
            agent=Agent.CLAUDE_CODE,
            path=path,
            form=Form.TEXT,
            session=path.parent.name,
            place=Place.FILE_BACKUP,
        )
    if (root / "history.jsonl").is_file():
        yield Store(
            agent=Agent.CLAUDE_CODE,
            path=root / "history.jsonl",
            form=Form.JSONL,
            place=Place.PROMPT_LOG,
        )


def note(doc: Any, notes: Notes) -> None:
    if not isinstance(doc, dict):
        return
    if doc.get("type") in ("ai-title", "custom-title", "summary"):
        title = doc.get("customTitle") or doc.get("aiTitle") or doc.get("summary")
        if isinstance(title, str):
            notes.title = title
    content = value_at(doc, ("message", "content"))
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "tool_use":
            notes.calls[str(block.get("id"))] = str(block.get("name"))


def describe(item: Item, notes: Notes) -> Where:
    doc = item.doc if isinstance(item.doc, dict) else {}
    if item.store.place is not None:
        if item.store.place is Place.PROMPT_LOG:
            return where(
                item,
                notes,
                Place.PROMPT_LOG,
                ts=when(doc.get("timestamp")),
                project=doc.get("project"),
                session=doc.get("sessionId"),
            )
        return where(item, notes, item.store.place)
    known = {"session": doc.get("sessionId"), "project": doc.get("cwd")}
    ts = when(doc.get("timestamp"))
    path = item.path
    content = value_at(doc, ("message", "content"))
    if path[:1] == ("toolUseResult",):
        first = content[0] if isinstance(content, list) and content else {}
        call = first.get("tool_use_id") if isinstance(first, dict) else None
        return where(item, notes, Place.TOOL_RESULT, notes.calls.get(str(call)), ts, **known)
    if path[:2] == ("message", "content") and len(path) > 2 and isinstance(content, list):
        block = value_at(content, path[2:3])
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            tool = notes.calls.get(str(block.get("tool_use_id")))
            return where(item, notes, Place.TOOL_RESULT, tool, ts, **known)
        if kind == "tool_use":
            return where(item, notes, Place.TOOL_INPUT, block.get("name"), ts, **known)
    kind = doc.get("type")
    if path[:2] == ("message", "content") or kind in ("queue-operation", "last-prompt"):
        role = value_at(doc, ("message", "role"))
        place = Place.ASSISTANT_TEXT if role == "assistant" else Place.USER_TEXT
        return where(item, notes, place, ts=ts, **known)
    if kind == "attachment":
        return where(item, notes, Place.TOOL_RESULT, "attachment", ts, **known)
    return where(item, notes, Place.METADATA, ts=ts, **known)


READER = Reader(
    agent=Agent.CLAUDE_CODE,
    stores=stores,
    describe=describe,
    note=note,
    markers=('"tool_use"', '"ai-title"', '"custom-title"', '"summary"'),
)
