"""A conversation turn by turn as the provider received it, each turn's new items marked."""

from __future__ import annotations

from typing import Any

from gate.audit import conversations
from gate.audit.conversations import Item
from gate.audit.store import AuditStore

ROW_FIELDS = ("id", "ts", "model", "verdict", "status", "error", "reason")


def turns(store: AuditStore, ids: list[int]) -> list[dict[str, Any]]:
    """Per request: its row, its items, and from which one on they are new (the previous
    request's items are a prefix of an unchanged history)."""
    out: list[dict[str, Any]] = []
    before: list[Item] = []
    for rid in ids:
        row = store.get(rid, body=False) or {}
        now = conversations.items(store.body_of(rid))
        shared = 0
        while shared < min(len(before), len(now)) and before[shared] == now[shared]:
            shared += 1
        out.append({"row": {k: row.get(k) for k in ROW_FIELDS}, "items": now, "new_from": shared})
        before = now or before
    return out
