"""Aider: .aider.chat.history.md, .aider.input.history and .aider.llm.history in each
project it ran in (and the home directory, its default for some installs)."""

from __future__ import annotations

from collections.abc import Iterator

from gate.history.item import Item
from gate.history.model import Agent, Form, Place, Store, Where
from gate.history.readers import Env, Notes, Reader, where

FILES = {
    ".aider.chat.history.md": None,
    ".aider.input.history": Place.PROMPT_LOG,
    ".aider.llm.history": None,
}


def stores(env: Env) -> Iterator[Store]:
    seen = set()
    for top in (*env.projects, env.home):
        for name, place in FILES.items():
            path = top / name
            if path.is_file() and not path.is_symlink() and path not in seen:
                seen.add(path)
                yield Store(
                    agent=Agent.AIDER, path=path, form=Form.TEXT, project=str(top), place=place
                )


def describe(item: Item, notes: Notes) -> Where:
    """In the chat log, `#### ` opens what the user typed, `> ` what aider printed (tool
    output, added files), other lines are the model's reply."""
    text = item.doc if isinstance(item.doc, str) else ""
    if item.store.place is Place.PROMPT_LOG:
        return where(item, notes, Place.PROMPT_LOG)
    if text.startswith("#### "):
        return where(item, notes, Place.USER_TEXT)
    if text.startswith(">"):
        return where(item, notes, Place.TOOL_RESULT, "aider")
    return where(item, notes, Place.ASSISTANT_TEXT)


READER = Reader(agent=Agent.AIDER, stores=stores, describe=describe)
