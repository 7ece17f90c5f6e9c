"""A gate killed with SIGKILL mid-request leaves an audit that opens and verifies; a corrupt
audit.db is moved aside by `gate serve`, which says so and keeps serving."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import httpx2 as httpx
from audit import serve_kit
from audit.session_kit import bodies

from fake_provider import FakeProvider
from gate.audit import chain
from gate.audit.store import AuditStore


def test_sigkill_during_requests_leaves_an_audit_that_opens_and_verifies(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    provider.sse_delay = 0.2  # streams stay open: requests are in flight when gate dies
    proc, base = serve_kit.start(provider.url)
    sent: list[int] = []

    def agent(seed: int) -> None:
        for body in bodies(40, seed=seed, result_lines=400):
            try:
                serve_kit.post(base, body, **{"x-claude-code-session-id": f"s{seed}"})
            except httpx.HTTPError:
                return  # the gate is gone
            sent.append(seed)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 30
    while len(provider.seen) < 8 and time.monotonic() < deadline:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    for t in threads:
        t.join(timeout=60)
    assert len(provider.seen) >= 8
    store = AuditStore(gate_dirs["data"] / "audit.db")
    verdict = chain.verify(store.conn())
    assert verdict.ok, verdict
    # Every request that reached the provider was committed before it was sent.
    assert verdict.requests >= len(provider.seen)
    rows = list(store.rows(1000, body=False))
    assert any(r["status"] is None for r in rows)  # some were in flight
    forwarded = [store.body_of(r["id"]) for r in rows if r["verdict"] == "forwarded"]
    assert {p.body for p in provider.seen} <= set(forwarded)


def test_gate_serve_moves_a_corrupt_audit_aside_and_serves(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    data = gate_dirs["data"]
    data.mkdir(mode=0o700)
    (data / "audit.db").write_bytes(b"not a database, truncated by a crash " * 200)
    proc, base = serve_kit.start(provider.url)
    try:
        resp = serve_kit.post(
            base,
            json.dumps(
                {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hello"}]}
            ).encode(),
        )
        assert resp.status_code == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    aside = list(data.glob("audit.db.corrupt-*"))
    assert len(aside) == 1
    assert str(data / "audit.db") in err and str(aside[0]) in err
    assert "moved it to" in err
    store = AuditStore(data / "audit.db")
    assert chain.verify(store.conn()).requests == 1
