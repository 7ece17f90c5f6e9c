"""Provider-shaped error bodies, so each SDK and agent shows gate's message to the user."""

from __future__ import annotations

import json

from gate.providers import anthropic


def error(upstream: str, path: str, status: int, message: str) -> bytes:
    if upstream == "anthropic" or anthropic.matches(path):
        body: object = anthropic.error_body(message)
    elif upstream == "gemini" or ":generateContent" in path or ":streamGenerateContent" in path:
        body = {"error": {"code": status, "message": message, "status": "PERMISSION_DENIED"}}
    else:  # OpenAI and OpenAI-compatible
        body = {"error": {"message": message, "type": "gate_error", "code": "gate_blocked",
                          "param": None}}
    return json.dumps(body).encode()


def not_found(path: str, names: list[str]) -> bytes:
    known = ", ".join(f"/{n}" for n in sorted(names))
    return json.dumps({"error": {
        "type": "not_found",
        "message": f"gate: no upstream for {path.split('?', 1)[0]!r}; known prefixes: {known}."
                   " Point the agent's base URL at one of them, or add one with"
                   " --upstream NAME=URL.",
    }}).encode()
