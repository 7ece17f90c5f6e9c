"""Audit rows as gate writes them for a Messages request, for tests that fill an audit."""

from __future__ import annotations

from typing import Any

from gate.audit.records import RequestRow


def messages_row(body: bytes | None, **fields: Any) -> RequestRow:
    """The row of a Messages request sending `body` (forwarded, unless `fields` say
    otherwise; `request_bytes` is the body's length unless given)."""
    base: dict[str, Any] = {
        "upstream": "anthropic",
        "host": "h",
        "method": "POST",
        "path": "/v1/messages",
        "request_bytes": len(body or b""),
        "verdict": "forwarded",
        "body": body,
    }
    return RequestRow(**(base | fields))
