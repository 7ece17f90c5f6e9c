"""Retention: old requests and the chunks only they used go; the chain still verifies;
the settings come from config.yaml with clear errors."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import pytest
from audit.session_kit import bodies
from click.testing import CliRunner

from gate import config as config_mod
from gate.audit import chain, retention, search
from gate.audit.records import RequestRow
from gate.audit.store import AuditStore
from gate.cli import cli
from gate.config import AuditSettings
from gate.errors import ConfigError

DAY = 86400.0


def record(store: AuditStore, body: bytes, ts: float, session: str) -> int:
    return store.record_request(
        RequestRow(
            upstream="anthropic",
            host="h",
            method="POST",
            path="/v1/m",
            request_bytes=len(body),
            verdict="forwarded",
            body=body,
            ts=ts,
            session=session,
        ),
    )


def test_old_requests_and_their_chunks_are_pruned_and_the_chain_still_verifies(
    tmp_path: Path,
) -> None:
    store = AuditStore(tmp_path / "audit.db", AuditSettings(retention_days=30))
    now = time.time()
    old, new = list(bodies(4, seed=1)), list(bodies(3, seed=2))
    for body in old:
        record(store, body, now - 40 * DAY, "s:old")
    for body in new:
        record(store, body, now - DAY, "s:new")
    assert search.text_search(store, "toolu_1_0003")  # only the old session sent it
    done = retention.prune(store, now)
    assert done.requests == 4 and done.chunks > 0
    assert [r["id"] for r in store.rows(body=False)] == [7, 6, 5]
    assert store.body_of(7) == new[-1]
    verdict = chain.verify(store.conn())
    assert verdict.ok and verdict.requests == 3
    assert search.text_search(store, "toolu_1_0003") == []  # its chunks and index entries went
    assert search.text_search(store, "toolu_2_0002")
    # The chain goes on from the anchor, and survives pruning everything.
    record(store, b"{}", now, "s:x")
    assert chain.verify(store.conn()).ok
    assert retention.prune(store, now + 365 * DAY).requests == 4
    db = store.conn()
    assert db.execute("SELECT COUNT(*) FROM chunks").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM blocks").fetchone()[0] == 0
    # The full-text index forgot them too (it was filled by text_search above).
    assert (
        db.execute("SELECT COUNT(*) FROM chunk_text WHERE chunk_text MATCH 'foxtrot'").fetchone()[0]
        == 0
    )
    record(store, b"{}", now + 365 * DAY, "s:y")
    verdict = chain.verify(store.conn())
    assert verdict.ok and verdict.requests == 1


def test_the_size_cap_drops_the_oldest_until_under(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "audit.db", AuditSettings(max_size_mb=1))
    now = time.time()
    for n in range(25):  # incompressible content, well over 1 MB in all
        body = json.dumps({"messages": [{"role": "user", "content": os.urandom(40_000).hex()}]})
        record(store, body.encode(), now, f"s:{n}")
    before = retention.used_bytes(store.conn())
    assert before > 1 << 20
    done = retention.prune(store, now)
    assert done.requests > 0 and retention.used_bytes(store.conn()) <= 1 << 20
    first = min(r["id"] for r in store.rows(1000, body=False))
    assert first == done.requests + 1  # the oldest went first
    assert chain.verify(store.conn()).ok


def test_a_serving_gate_prunes_at_start(gate_dirs: dict[str, Path]) -> None:
    from dataclasses import replace

    from gate.config import Config
    from gate.proxy.server import BackgroundGate

    path = gate_dirs["data"] / "audit.db"
    store = AuditStore(path)
    record(store, b'{"old":1}', time.time() - 10 * DAY, "s")
    record(store, b'{"new":1}', time.time(), "s")
    server = BackgroundGate(
        replace(
            Config(),
            port=0,
            projects=(str(gate_dirs["project"]),),
            audit=AuditSettings(retention_days=7),
        ),
        gate_dirs["data"],
    )
    server.start()
    try:
        deadline = time.monotonic() + 10
        while len(list(store.rows(body=False))) > 1:
            assert time.monotonic() < deadline, "the old request was not pruned"
            time.sleep(0.05)
    finally:
        server.stop()
    assert store.body_of(2) == b'{"new":1}' and chain.verify(store.conn()).ok


def test_gate_audit_prune_applies_config(gate_dirs: dict[str, Path]) -> None:
    gate_dirs["config"].mkdir()
    (gate_dirs["config"] / "config.yaml").write_text("audit:\n  retention_days: 1\n")
    store = AuditStore(gate_dirs["data"] / "audit.db")
    record(store, b'{"a":1}', time.time() - 3 * DAY, "s")
    record(store, b'{"a":2}', time.time(), "s")
    result = CliRunner().invoke(cli, ["audit", "prune", "--json"])
    assert result.exit_code == 0 and json.loads(result.stdout)["requests"] == 1


@pytest.mark.parametrize(
    ("yaml", "field", "says"),
    [
        ("audit:\n  retention_days: 0\n", "audit.retention_days", "positive integer"),
        ("audit:\n  retention_days: ninety\n", "audit.retention_days", "positive integer"),
        ("audit:\n  max_size_mb: true\n", "audit.max_size_mb", "positive integer"),
        ("audit:\n  lock_timeout_ms: -5\n", "audit.lock_timeout_ms", "positive integer"),
        ("audit:\n  retention: 5\n", "audit.retention", "unknown key"),
        ("audit: 90\n", "audit", "must be a mapping"),
    ],
)
def test_bad_audit_settings_name_the_file_and_field(
    tmp_path: Path, yaml: str, field: str, says: str
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(yaml)
    with pytest.raises(ConfigError) as err:
        config_mod.load(path)
    # The file, the line of the field and the field.
    assert re.fullmatch(rf"{re.escape(str(path))}:\d+: {re.escape(field)}", err.value.where or "")
    assert says in err.value.message


def test_audit_settings_load(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("audit:\n  retention_days: 7\n  max_size_mb: 500\n  lock_timeout_ms: 250\n")
    assert config_mod.load(path).audit == AuditSettings(7, 500, 250)
    path.write_text("audit:\n  max_size_mb: null\n")
    assert config_mod.load(path).audit == AuditSettings()
