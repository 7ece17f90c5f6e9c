"""Raw HTTP to a gate's control API, with whatever headers a test needs to forge."""

from __future__ import annotations

import http.client
import json
from pathlib import Path
from typing import Any

from gate.proxy.server import Listening


def token(data_dir: Path) -> str:
    return (data_dir / "control.token").read_text().strip()


def call(
    gate: Listening,
    method: str,
    path: str,
    *,
    body: Any = None,
    headers: dict[str, str] | None = None,
    auth: str | None = None,
) -> tuple[int, Any]:
    """(status, parsed JSON or text); `auth` is sent as the Bearer token when given."""
    conn = http.client.HTTPConnection(gate.host, gate.port, timeout=10)
    hdrs = {"host": f"127.0.0.1:{gate.port}", **(headers or {})}
    if auth is not None:
        hdrs["authorization"] = f"Bearer {auth}"
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    conn.request(method, path, body=data, headers=hdrs)
    resp = conn.getresponse()
    raw = resp.read()
    conn.close()
    try:
        return resp.status, json.loads(raw)
    except ValueError:
        return resp.status, raw.decode()
