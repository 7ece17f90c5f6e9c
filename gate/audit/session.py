"""Which conversation a request belongs to, so `gate show --new` can compare it with the
previous request of the same one."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

# Headers agents send that name a conversation (protocols.md): Claude Code's session and,
# for a subagent, its agent id; Codex's session_id / conversation_id. Their values are
# identifying, so only a hash of them is stored.
_HEADERS = ("x-claude-code-session-id", "x-claude-code-agent-id", "session_id",
            "conversation_id")


def session_key(headers: Mapping[str, str], run_id: str | None, agent: str | None,
                upstream: str) -> str:
    """`s:` + a hash of the agent's session headers; without them, `d:` + a hash of the run,
    agent and upstream (every conversation of that run then counts as one session)."""
    named = [f"{h}={headers[h]}" for h in _HEADERS if headers.get(h)]
    if named:
        return "s:" + _short("\n".join(named))
    return "d:" + _short(f"{run_id}\n{agent}\n{upstream}")


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
