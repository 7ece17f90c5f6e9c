"""The NDJSON event stream (`gate serve --events`): one JSON object a line on stderr.

Off unless configured; stdout stays clean either way. Events carry what a question shows
(masked previews, kinds, rules), never a value.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any, TextIO

_stream: TextIO | None = None
_lock = threading.Lock()


def configure(stream: TextIO | None) -> None:
    """Write events to `stream` (None: stop)."""
    global _stream
    with _lock:
        _stream = stream


def emit(event: str, **fields: Any) -> None:
    """Write one event line; a broken stream never stops a request."""
    with _lock:
        if _stream is None:
            return
        try:
            _stream.write(
                json.dumps(
                    {"event": event, "ts": time.time(), **fields},
                    default=str,
                    separators=(",", ":"),
                )
                + "\n"
            )
            _stream.flush()
        except (OSError, ValueError):
            pass
