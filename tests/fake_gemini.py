"""Gemini replies for the fake model: generateContent whole, or streamed as SSE chunks."""

from __future__ import annotations

from typing import Any

from agent_script import Call, Turn

USAGE = {
    "promptTokenCount": 21,
    "candidatesTokenCount": 7,
    "cachedContentTokenCount": 3,
    "totalTokenCount": 28,
}


def model_of(path: str) -> str:
    """The model a path names (`…/models/{m}:method`); Code Assist names it in the body."""
    head = path.split("?", 1)[0].rsplit(":", 1)[0]
    return head.rsplit("/models/", 1)[1] if "/models/" in head else "gemini-fake"


def _part(turn: Turn) -> dict[str, Any]:
    if isinstance(turn, Call):
        return {"functionCall": {"id": turn.id, "name": turn.name, "args": turn.args}}
    return {"text": turn.text}


def generate(turns: list[Turn], model: str) -> dict[str, Any]:
    return {
        "candidates": [
            {
                "content": {"role": "model", "parts": [_part(t) for t in turns]},
                "finishReason": "STOP",
                "index": 0,
            }
        ],
        "usageMetadata": USAGE,
        "modelVersion": model,
    }


def chunks(turns: list[Turn], model: str) -> list[dict[str, Any]]:
    """One chunk per part; the last carries the finish reason and the full usage."""
    out = []
    for n, turn in enumerate(turns):
        last = n == len(turns) - 1
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": [_part(turn)]},
            "index": 0,
        }
        if last:
            candidate["finishReason"] = "STOP"
        usage = USAGE if last else {**USAGE, "candidatesTokenCount": n + 1}
        out.append({"candidates": [candidate], "usageMetadata": usage, "modelVersion": model})
    return out
