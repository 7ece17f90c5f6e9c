"""Which conversation a request belongs to, so `gate show --new` can compare it with the
previous request of the same one."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

# Headers agents send that name a conversation (protocols.md): Claude Code's session and,
# for a subagent, its agent id; Codex's session_id / conversation_id. Their values are
# identifying, so only a hash of them is stored.
_HEADERS = ("x-claude-code-session-id", "x-claude-code-agent-id", "session_id", "conversation_id")


def session_key(
    headers: Mapping[str, str],
    run_id: str | None,
    agent: str | None,
    upstream: str,
    user: str | None = None,
) -> str:
    """`s:` + a hash of the agent's session headers; without them, `d:` + a hash of the run,
    agent and upstream (every conversation of that run then counts as one session). On a
    shared gate the user is part of it: one user naming another's session id does not
    join it (nor inherit the answers given for it)."""
    named = [f"{h}={headers[h]}" for h in _HEADERS if headers.get(h)]
    whose = [f"user={user}"] if user is not None else []
    if named:
        return "s:" + _short("\n".join(named + whose))
    return "d:" + _short("\n".join([str(run_id), str(agent), upstream, *whose]))


def _short(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
