"""Request bodies in and out: parsed as the JSON spec says, written back compactly."""

from __future__ import annotations

import json
from typing import Any

import orjson


def parse(raw: bytes) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        # orjson refuses what the JSON spec allows but it does not (lone \u-escaped
        # surrogates, integers beyond 64 bits); the standard parser decides.
        return json.loads(raw)


def dump(body: Any) -> bytes:
    """Serialize a rewritten body compactly (UTF-8, no spaces), as SDKs and agents send it."""
    try:
        return orjson.dumps(body)
    except (orjson.JSONEncodeError, TypeError):  # a lone surrogate stays \u-escaped
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode()
