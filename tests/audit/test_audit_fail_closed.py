"""Fail closed: when the audit record cannot be committed (database locked beyond the
bound, disk full), the request is blocked, the reason logged, and nothing leaves."""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anthropic
import pytest
from audit import serve_kit
from audit_rows import messages_row
from loguru import logger

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.audit import chain
from gate.audit.store import AuditStore
from gate.config import AuditSettings, Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening


@pytest.fixture
def quick_gate(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    """A gate whose audit gives up on a held lock after 300 ms."""
    known = (str(gate_dirs["project"]),)  # as `gate serve --project` would
    config = replace(
        Config(), port=0, projects=known, audit=AuditSettings(lock_timeout_ms=300)
    ).with_upstreams({"anthropic": parse_upstream("anthropic", provider.url)})
    server = BackgroundGate(config, gate_dirs["data"])
    yield server.start()
    server.stop()


def _client(gate: Listening) -> anthropic.Anthropic:
    return closed_after_test(
        anthropic.Anthropic(
            base_url=f"{gate.base_url}/anthropic", api_key="sk-ant-test", max_retries=0
        )
    )


def test_a_database_locked_beyond_the_bound_blocks_the_request(
    quick_gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    client = _client(quick_gate)
    client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "a"}])
    assert len(provider.seen) == 1
    holder = sqlite3.connect(gate_dirs["data"] / "audit.db", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holding the write lock
    logged: list[str] = []
    sink = logger.add(logged.append, level="WARNING", format="{message}")
    try:
        with pytest.raises(anthropic.BadRequestError) as err:
            client.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "b"}]
            )
    finally:
        logger.remove(sink)
        holder.execute("ROLLBACK")
        holder.close()
    message = err.value.response.json()["error"]["message"]
    assert "could not write the audit record (database is locked)" in message
    assert "audit.lock_timeout_ms (300 ms)" in message
    assert len(provider.seen) == 1  # the blocked request never reached the provider
    assert any("could not write the audit record" in m for m in logged), logged
    # Fail closed is per request: with the lock free again, requests flow.
    client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "c"}])
    assert len(provider.seen) == 2
    assert chain.verify(AuditStore(gate_dirs["data"] / "audit.db").conn()).ok


def _small_disk() -> None:
    """In the child: files may not grow past 3 MB (EFBIG, as on a full disk)."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (3 << 20, resource.RLIM_INFINITY))


def test_a_full_disk_blocks_the_request_in_a_real_gate_serve(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    proc, base = serve_kit.start(provider.url, _small_disk)
    try:
        ok = serve_kit.post(
            base,
            json.dumps(
                {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "fits"}]}
            ).encode(),
        )
        assert ok.status_code == 200 and len(provider.seen) == 1
        big = json.dumps(
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": os.urandom(2 << 20).hex()}],
            }
        ).encode()
        resp = serve_kit.post(base, big)
        assert resp.status_code == 400, resp.text
        message = resp.json()["error"]["message"]
        # EFBIG reaches SQLite as an I/O error (ENOSPC would say "database or disk is full").
        assert "could not write the audit record (disk I/O error)" in message
        assert "not sent" in message and "free disk space" in message
        assert len(provider.seen) == 1  # nothing of the big request left
        again = serve_kit.post(
            base,
            json.dumps(
                {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "after"}]}
            ).encode(),
        )
        assert again.status_code == 200 and len(provider.seen) == 2
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=30)
    assert "could not write the audit record" in err  # the reason is in gate's log
    store = AuditStore(gate_dirs["data"] / "audit.db")
    assert chain.verify(store.conn()).ok
    assert [r["verdict"] for r in store.rows(body=False)] == ["forwarded", "blocked", "forwarded"]


def _immutable(path: Path, on: bool) -> bool:
    """chattr +i: read-only even for root (chmod is not, and tests may run as root)."""
    proc = subprocess.run(
        ["chattr", "+i" if on else "-i", str(path)], capture_output=True, check=False
    )
    return proc.returncode == 0


def test_a_read_only_database_blocks_the_request_in_a_real_gate_serve(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    path = gate_dirs["data"] / "audit.db"
    AuditStore(path).record_request(
        messages_row(b"{}"),
    )
    if shutil.which("chattr") is None or not _immutable(path, True):
        pytest.skip("chattr +i is not available on this file system")
    try:
        proc, base = serve_kit.start(provider.url)
        try:
            resp = serve_kit.post(
                base,
                json.dumps(
                    {
                        "model": "m",
                        "max_tokens": 5,
                        "messages": [{"role": "user", "content": "hello"}],
                    }
                ).encode(),
            )
        finally:
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=30)
    finally:
        _immutable(path, False)
    assert resp.status_code == 400, resp.text
    message = resp.json()["error"]["message"]
    assert "could not write the audit record (attempt to write a readonly database)" in message
    assert "make the data dir and audit.db writable" in message
    assert provider.seen == []  # nothing left the machine
    assert "readonly database" in err  # the reason is in gate's log
    assert chain.verify(AuditStore(path).conn()).requests == 1
