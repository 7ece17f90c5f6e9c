"""The audit's records: what the proxy hands the store for a request's row and its response."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class Disposition(StrEnum):
    """What gate did with a request: its row's `verdict` column; never rename."""

    FORWARDED = "forwarded"  # sent as the agent wrote it
    MODIFIED = "modified"  # sent with something withheld
    UNSCREENED = "unscreened"  # sent unread: an upstream set to pass what is not JSON
    BLOCKED = "blocked"  # refused
    WITHDRAWN = "withdrawn"  # the agent went away while gate was asking; nothing sent


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Attribution:
    """Who sent a request and in which conversation: the same on a sent and a refused row."""

    run_id: str | None = None
    agent: str | None = None
    project_root: str | None = None
    session: str | None = None
    user_name: str | None = None
    model: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RequestRow:
    """One request's row, as committed before it leaves (or as refused)."""

    upstream: str
    host: str
    method: str
    path: str  # as shown: never a value that held a finding
    request_bytes: int
    verdict: Disposition
    ts: float | None = None  # None: now
    # Who sent it (Attribution's fields).
    run_id: str | None = None
    agent: str | None = None
    project_root: str | None = None
    session: str | None = None
    user_name: str | None = None
    model: str | None = None
    # What was withheld: kinds, rules, where (never content); written as a JSON list.
    withheld: Sequence[Mapping[str, object]] = ()
    reason: str | None = None  # why it was refused
    status: int | None = None  # a refused request's: the one the agent was sent
    body: bytes | None = None  # the exact body sent (decoded), kept as chunks
    content_encoding: str | None = None

    def columns(self, ts: float, withheld: str) -> dict[str, Any]:
        """The row's columns (but its body's, its id and its hashes), `ts` and `withheld`
        as stored. Enum values go in as plain strings."""
        return {
            "ts": float(ts),  # REAL columns read back as floats: hashed as floats
            "run_id": self.run_id,
            "session": self.session,
            "agent": self.agent,
            "user_name": self.user_name,
            "upstream": self.upstream,
            "host": self.host,
            "method": self.method,
            "path": self.path,
            "model": self.model,
            "project_root": self.project_root,
            "request_bytes": self.request_bytes,
            "verdict": str(self.verdict),
            "withheld": withheld,
            "reason": self.reason,
            "status": self.status,
            "content_encoding": self.content_encoding,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    """What a request's row learns once its response is done."""

    status: int | None
    latency_ms: float
    usage: Usage = Usage()
    error: str | None = None
