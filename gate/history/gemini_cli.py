"""Gemini CLI: chat records under ~/.gemini/tmp/<project>/chats/ (JSONL, or one JSON
document in older builds) and the prompt logs beside them; .project_root names the project."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from gate.history.item import Item, value_at
from gate.history.model import Agent, Form, Place, Store, Where
from gate.history.readers import Env, Notes, Reader, files, when, where


def stores(env: Env) -> Iterator[Store]:
    tmp = env.dir("GEMINI_CLI_HOME", "") / ".gemini" / "tmp"
    for project in sorted(p for p in tmp.glob("*") if p.is_dir()) if tmp.is_dir() else ():
        root = _root(project)
        for path in files(project / "chats", "*.jsonl"):
            yield Store(agent=Agent.GEMINI_CLI, path=path, form=Form.JSONL, project=root)
        for path in files(project / "chats", "*.json"):
            yield Store(agent=Agent.GEMINI_CLI, path=path, form=Form.JSON, project=root)
        for path in [*files(project, "logs.json"), *files(project / "logs", "*.json")]:
            yield Store(
                agent=Agent.GEMINI_CLI,
                path=path,
                form=Form.JSON,
                project=root,
                place=Place.PROMPT_LOG,
            )


def _root(project: Path) -> str | None:
    try:
        return (project / ".project_root").read_text("utf-8").strip() or None
    except OSError:
        return None


def note(doc: Any, notes: Notes) -> None:
    if isinstance(doc, dict) and isinstance(doc.get("sessionId"), str):
        notes.session = doc["sessionId"]


def describe(item: Item, notes: Notes) -> Where:
    path = item.path
    # A message is a line of its own, an entry of a `$set` list, or of `messages` in an
    # older whole-session document: the innermost object with a `type` says which.
    msg: Any = item.doc
    depth = 0
    for n in range(len(path), -1, -1):
        here = value_at(item.doc, path[:n])
        if isinstance(here, dict) and isinstance(here.get("type"), str) and "id" in here:
            msg, depth = here, n
            break
    msg = msg if isinstance(msg, dict) else {}
    session = item.doc.get("sessionId") if isinstance(item.doc, dict) else None
    known = {"session": session if isinstance(session, str) else None}
    ts = when(msg.get("timestamp"))
    if item.store.place is Place.PROMPT_LOG:
        return where(item, notes, Place.PROMPT_LOG, ts=ts, **known)
    rest = path[depth:]
    if rest[:1] == ("toolCalls",) and len(rest) > 1:
        call = value_at(msg, rest[:2])
        tool = call.get("name") if isinstance(call, dict) else None
        place = Place.TOOL_INPUT if rest[2:3] == ("args",) else Place.TOOL_RESULT
        return where(item, notes, place, tool, ts, **known)
    if "functionResponse" in rest:
        i = rest.index("functionResponse")
        tool = value_at(msg, (*rest[: i + 1], "name"))
        return where(
            item, notes, Place.TOOL_RESULT, tool if isinstance(tool, str) else None, ts, **known
        )
    kind = msg.get("type")
    place = {
        "user": Place.USER_TEXT,
        "gemini": Place.ASSISTANT_TEXT,
        "model": Place.ASSISTANT_TEXT,
    }.get(str(kind), Place.METADATA)
    return where(item, notes, place, ts=ts, **known)


READER = Reader(
    agent=Agent.GEMINI_CLI, stores=stores, describe=describe, note=note, markers=('"sessionId"',)
)
