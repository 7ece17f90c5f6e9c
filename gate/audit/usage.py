"""Token usage read from a response as it streams past (SSE or JSON), without buffering it."""

from __future__ import annotations

import json
from typing import Any

from gate.audit.lines import marked
from gate.audit.records import Usage

_MAX_JSON = 8 << 20  # a non-streamed body larger than this is not parsed for usage
# Provider usage keys → our fields. Anthropic, OpenAI Chat/Responses, Gemini.
_KEYS = {
    "input_tokens": "input_tokens",
    "prompt_tokens": "input_tokens",
    "promptTokenCount": "input_tokens",
    "output_tokens": "output_tokens",
    "completion_tokens": "output_tokens",
    "candidatesTokenCount": "output_tokens",
    "cache_read_input_tokens": "cache_read_tokens",
    "cachedContentTokenCount": "cache_read_tokens",
    "cache_creation_input_tokens": "cache_creation_tokens",
}


class UsageTap:
    """Fed every response chunk; keeps only what it needs (SSE lines, or a bounded JSON body)."""

    def __init__(self, content_type: str):
        self.sse = content_type.startswith("text/event-stream")
        self._pending = b""
        self._json = bytearray()
        self._fields: dict[str, int] = {}
        self.overflow = False

    def feed(self, chunk: bytes) -> None:
        if not self.sse:
            if len(self._json) + len(chunk) <= _MAX_JSON:
                self._json += chunk
            else:
                self.overflow = True
            return
        lines, self._pending = marked(self._pending, chunk, (b"sage",))
        for line in lines:
            if line.startswith(b"data:"):
                self._take(line[5:])

    @property
    def body(self) -> bytes | None:
        """The non-streamed body as received (still content-encoded), if it was kept whole."""
        return None if self.sse or self.overflow or not self._json else bytes(self._json)

    def finish(self, decode: Any = None) -> Usage:
        if self.sse:
            if self._pending.startswith(b"data:"):
                self._take(self._pending[5:])
        elif self._json and not self.overflow:
            raw = bytes(self._json)
            self._take(decode(raw) if decode else raw)
        return Usage(**self._fields)

    def _take(self, data: bytes) -> None:
        try:
            obj = json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return
        _collect(obj, self._fields, depth=0)


def _collect(obj: Any, out: dict[str, int], depth: int) -> None:
    if depth > 4 or not isinstance(obj, dict):
        return
    # count_tokens answers with the counts at the top level.
    candidates = [obj] if depth == 0 and "input_tokens" in obj else []
    for usage in [*candidates, obj.get("usage"), obj.get("usageMetadata")]:
        if isinstance(usage, dict):
            for k, v in usage.items():
                field = _KEYS.get(k)
                if field and isinstance(v, int) and not isinstance(v, bool):
                    out[field] = v
    for key in ("message", "response"):
        _collect(obj.get(key), out, depth + 1)
