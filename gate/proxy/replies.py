"""Provider-shaped error bodies, so each SDK and agent shows gate's message to the user."""

from __future__ import annotations

import json

from gate import providers
from gate.providers import anthropic, gemini, openai_chat
from gate.providers.format import Format

# The status of gate's refusal. Agents read 401/403 as a sign-in problem (Claude Code:
# "Failed to authenticate", "Please run /login"; Codex retries a 403 five times), and retry
# 429/5xx; a 400 each shows once, as a plain error with gate's message (checked with the
# real Claude Code, Codex and Gemini CLI against a loopback fake).
BLOCK_STATUS = 400

# When the path names no known format, the upstream's name says which shape to use.
_BY_UPSTREAM: dict[str, Format] = {"anthropic": anthropic, "gemini": gemini, "code-assist": gemini}


def error(upstream: str, path: str, status: int, message: str) -> bytes:
    fmt = providers.detect(path) or _BY_UPSTREAM.get(upstream)
    if fmt is None and any(
        m in path.lower() for m in (":generatecontent", ":streamgeneratecontent")
    ):
        fmt = gemini  # a Google method path no format walks, e.g. a Vertex endpoint
    return json.dumps((fmt or openai_chat).error_body(message, status)).encode()


def not_found(path: str, names: list[str]) -> bytes:
    known = ", ".join(f"/{n}" for n in sorted(names))
    return json.dumps(
        {
            "error": {
                "type": "not_found",
                "message": f"gate: no upstream for {path.split('?', 1)[0]!r};"
                f" known prefixes: {known}."
                " Point the agent's base URL at one of them, or add one with"
                " --upstream NAME=URL.",
            }
        }
    ).encode()


def upstream_failed(status: int, message: str) -> bytes:
    """What an agent gets when gate could not reach the upstream, or it broke off before
    answering. mitmproxy cannot tell gate which format the failed request spoke, so the
    body has each format's fields at once: Anthropic's `type` and `error.type`, OpenAI's
    `error.message` and `error.code`, Google's `error.code` and `error.status`."""
    text = (
        f"gate could not get an answer from the upstream ({message}); the request was"
        " recorded in gate's audit with this error"
    )
    status_name = {502: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}.get(status, "UNKNOWN")
    return json.dumps(
        {
            "type": "error",
            "error": {
                "type": "api_error",
                "message": text,
                "code": status,
                "status": status_name,
                "param": None,
            },
        }
    ).encode()
