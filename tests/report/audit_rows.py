"""An audit populated the way real use fills it: requests through a real gate listener with
the anthropic SDK (today), plus rows written with AuditStore.record_request for other
agents, hosts and days, whose figures the report tests check."""

from __future__ import annotations

import datetime as dt
import random
import time
from dataclasses import dataclass
from typing import Any

from gate.audit.records import RequestRow, Response, Usage
from gate.audit.store import AuditStore
from screen.secrets_corpus import Gen

# Agent-chosen strings that must show as text, never run, in the HTML report.
SCRIPT_MODEL = "<script>window.__pwned = 1</script>"
IMG_MODEL = '<img src=x onerror="window.__pwned = 2">'


def local_day(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).date().isoformat()


def noon(days_ago: int) -> float:
    """Local noon some days back: far from midnight, so its day is certain."""
    day = dt.date.today() - dt.timedelta(days=days_ago)
    return dt.datetime.combine(day, dt.time(12)).timestamp()


@dataclass(frozen=True)
class Audit:
    now: float
    secrets: tuple[str, ...]  # values gate redacted or blocked: never in a report
    prompt: str  # text of a body that was sent: never in a report
    gate_sent: int  # bytes the provider received from the gate's requests
    rows: tuple[dict[str, Any], ...]  # the inserted rows, as given to record_request


def fake_token() -> str:
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


def _decision(ident: str, question: str, answer: str, by: str) -> dict[str, str]:
    return {"id": ident, "question": question, "answer": answer, "by": by}


def inserted_rows() -> tuple[dict[str, Any], ...]:
    """Other agents and days. q1 covers two requests (the history is resent): one question."""
    env = {
        "kind": "tool-result",
        "call_id": "call_1",
        "tool": "Read",
        "target": "/p/.env",
        "rule": "Read(./.env)",
        "where": "/p/.gate/rules.yaml:3",
        "count": 1,
        "decision": _decision("q1", "send-denied-content", "block", "person"),
    }
    pat = {
        "kind": "secret",
        "call_id": None,
        "tool": None,
        "target": "github-pat",
        "rule": "test-detector",
        "where": "tier high: redact",
        "count": 2,
        "fingerprint": "0123456789abcdef",
        "decision": _decision("q2", "send-secret", "approve", "memory"),
    }
    base = {"method": "POST", "status": 200, "latency_ms": 120.0}
    codex = {
        **base,
        "agent": "codex",
        "upstream": "openai",
        "host": "api.openai.com",
        "path": "/v1/responses",
        "model": "gpt-5-codex",
        "verdict": "modified",
    }
    gemini = {
        **base,
        "agent": "opencode",
        "upstream": "gemini",
        "host": "generativelanguage.googleapis.com",
        "path": "/v1beta/models",
    }
    return (
        {
            **codex,
            "ts": noon(2),
            "request_bytes": 5000,
            "withheld": [env],
            "input_tokens": 1000,
            "output_tokens": 200,
        },
        {
            **codex,
            "ts": noon(2) + 60,
            "request_bytes": 6000,
            "withheld": [env],
            "input_tokens": 1500,
            "output_tokens": 300,
        },
        {
            **gemini,
            "ts": noon(5),
            "model": SCRIPT_MODEL,
            "verdict": "modified",
            "request_bytes": 3000,
            "withheld": [pat],
            "input_tokens": 400,
            "output_tokens": 50,
        },
        {
            **gemini,
            "ts": noon(5) + 60,
            "model": IMG_MODEL,
            "verdict": "blocked",
            "request_bytes": 700,
            "reason": "body is not JSON <b>bold</b>",
            "status": 403,
        },
        {
            **base,
            "ts": noon(40),
            "agent": "claude-code",
            "upstream": "anthropic",
            "host": "api.anthropic.com",
            "path": "/v1/messages",
            "model": "claude-old",
            "verdict": "forwarded",
            "request_bytes": 9999,
            "input_tokens": 10,
            "output_tokens": 10,
        },
    )


def wait_for_responses(store: AuditStore, n: int) -> None:
    """Status and usage are written by the gate's response hook, a moment after the client
    may have its answer."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        rows = list(store.rows(n))
        if all(r["status"] is not None for r in rows if r["verdict"] != "blocked"):
            return
        time.sleep(0.02)


def insert(store: AuditStore, fields: dict[str, Any], body: bytes) -> int:
    """Write one of inserted_rows(): its request row, then what its response said."""
    fields = dict(fields)
    usage = Usage(fields.pop("input_tokens", None), fields.pop("output_tokens", None))
    latency = fields.pop("latency_ms", None)
    status = fields.pop("status", None) if latency is not None else None
    rid = store.record_request(RequestRow(**fields, body=body))
    if latency is not None:
        store.record_response(rid, Response(status=status, latency_ms=latency, usage=usage))
    return rid
