"""Conversations in the audit: the list `gate sessions` prints, and each request's messages
as the provider received them, for `gate show --session`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gate.audit.report import approved

if TYPE_CHECKING:
    from gate.audit.store import AuditStore

_PROMPT_CHARS = 80


@dataclass(frozen=True, slots=True, kw_only=True)
class Conversation:
    session: str
    agent: str | None
    project: str | None
    first_ts: float
    last_ts: float
    requests: int
    withheld: int  # findings withheld (approved ones were sent: not counted)
    blocked: int
    first_prompt: str  # the first user text, cut short

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class Item:
    """One message part: who (user, assistant, system, tool call, tool result) and its text."""

    role: str
    text: str


def listed(
    store: AuditStore, since: float | None = None, limit: int = 50, offset: int = 0
) -> list[Conversation]:
    """The most recent conversations first (skipping the `offset` most recent)."""
    db = store.conn()
    groups = db.execute(
        "SELECT session, MIN(ts), MAX(ts), COUNT(*), SUM(verdict = 'blocked'), MIN(id)"
        " FROM requests WHERE session IS NOT NULL AND ts >= ? GROUP BY session"
        " ORDER BY MAX(ts) DESC, MIN(id) DESC LIMIT ? OFFSET ?",
        (since or 0.0, limit, offset),
    ).fetchall()
    out = []
    for session, lo, hi, n, blocked, first in groups:
        withheld = 0
        agent = project = None
        for agent_, project_, entries in db.execute(
            "SELECT agent, project_root, withheld FROM requests WHERE session = ? ORDER BY id",
            (session,),
        ):
            agent, project = agent or agent_, project or project_
            withheld += sum(not approved(e.get("decision")) for e in json.loads(entries))
        out.append(
            Conversation(
                session=session,
                agent=agent,
                project=project,
                first_ts=lo,
                last_ts=hi,
                requests=n,
                withheld=withheld,
                blocked=int(blocked or 0),
                first_prompt=_first_prompt(store, session, first),
            )
        )
    return out


def requests_of(store: AuditStore, session: str) -> list[int]:
    """The session's requests in order; a unique prefix of the key names it too."""
    rows = (
        store.conn()
        .execute(
            "SELECT id, session FROM requests WHERE session >= ? AND session < ? ORDER BY id",
            (session, session + "\uffff"),
        )
        .fetchall()
    )
    keys = {s for _, s in rows}
    if len(keys) > 1 and session not in keys:
        raise ValueError(f"{session!r} names {len(keys)} sessions: give more of it")
    return [rid for rid, s in rows if s == session or len(keys) == 1]


def items(body: bytes | None) -> list[Item]:
    """Every message part of a body, in order, whatever its wire format."""
    try:
        parsed = json.loads(body or b"")
    except ValueError:
        return []
    if not isinstance(parsed, dict):
        return []
    out: list[Item] = []
    system = parsed.get("system") or parsed.get("instructions")
    if system:
        out.append(Item("system", _text(system)))
    for m in parsed.get("messages") or parsed.get("contents") or []:
        if isinstance(m, dict):
            out += _message(m)
    raw_input = parsed.get("input")
    if isinstance(raw_input, str):
        out.append(Item("user", raw_input))
    for m in raw_input if isinstance(raw_input, list) else []:
        if isinstance(m, dict):
            out += _message(m)
    return out


def _message(m: dict[str, Any]) -> list[Item]:
    kind = m.get("type")
    if kind in ("function_call", "custom_tool_call"):
        return [Item("tool call", f"{m.get('name')}({m.get('arguments') or m.get('input')})")]
    if kind in ("function_call_output", "custom_tool_call_output"):
        return [Item("tool result", _text(m.get("output")))]
    role = "assistant" if m.get("role") in ("assistant", "model") else str(m.get("role") or "?")
    content = m.get("content", m.get("parts"))
    if isinstance(content, str):
        return [Item(role, content)]
    out = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") == "tool_use" or "functionCall" in part:
            call = part.get("functionCall") or part
            args = json.dumps(call.get("input", call.get("args")), ensure_ascii=False)
            out.append(Item("tool call", f"{call.get('name')}({args})"))
        elif part.get("type") == "tool_result" or "functionResponse" in part:
            out.append(
                Item("tool result", _text(part.get("content", part.get("functionResponse"))))
            )
        elif isinstance(part.get("text"), str):
            out.append(Item(role, part["text"]))
    if isinstance(m.get("tool_calls"), list):  # chat completions
        out += [
            Item(
                "tool call",
                f"{(c.get('function') or {}).get('name')}"
                f"({(c.get('function') or {}).get('arguments')})",
            )
            for c in m["tool_calls"]
            if isinstance(c, dict)
        ]
    return out


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text(v.get("text", v) if isinstance(v, dict) else v) for v in value)
    return json.dumps(value, ensure_ascii=False)


def _first_prompt(store: AuditStore, session: str, first: int) -> str:
    for rid in [
        first,
        *(
            r
            for (r,) in store.conn().execute(
                "SELECT id FROM requests WHERE session = ? AND id > ? ORDER BY id LIMIT 3",
                (session, first),
            )
        ),
    ]:
        for item in items(store.body_of(rid)):
            if item.role == "user" and item.text.strip():
                text = " ".join(item.text.split())
                return text if len(text) <= _PROMPT_CHARS else text[: _PROMPT_CHARS - 1] + "…"
    return ""
