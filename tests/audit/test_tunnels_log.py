"""Forward mode's connection rows: pruned by audit retention like requests (SQLite and
PostgreSQL), and read with `gate log --tunnels`."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.audit import retention, tunnels
from gate.audit.records import RequestRow
from gate.audit.store import AuditStore
from gate.cli import cli
from gate.config import AuditSettings

DAY = 86400.0


def _open(
    store: AuditStore,
    host: str,
    age_days: float,
    kind: tunnels.Kind,
    agent: str | None = None,
    run_id: str | None = None,
) -> int:
    row = tunnels.opened(
        store, tunnels.Opened(host=host, port=443, kind=kind, agent=agent, run_id=run_id)
    )
    store.conn().execute(
        "UPDATE tunnels SET ts = ? WHERE id = ?", (time.time() - age_days * DAY, row)
    )
    return row


def _retention_keeps_only_young_rows(store: AuditStore) -> None:
    old = _open(store, "old.example", 40, tunnels.Kind.TUNNEL)
    young = _open(store, "young.example", 1, tunnels.Kind.BLOCKED)
    tunnels.closed(store, young, 10, 20)
    done = retention.prune(store)
    assert done.tunnels == 1
    assert [r["id"] for r in tunnels.rows(store)] == [young] and old != young
    [row] = tunnels.rows(store)
    assert (row["bytes_out"], row["bytes_in"]) == (10, 20)


def test_retention_prunes_tunnels_on_sqlite(tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "audit.db", AuditSettings(retention_days=30))
    _retention_keeps_only_young_rows(store)
    store.close()


def test_retention_prunes_tunnels_on_postgresql(pg_url: str, tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "unused.db", AuditSettings(url=pg_url, retention_days=30))
    _retention_keeps_only_young_rows(store)
    store.close()


def test_the_size_cap_takes_tunnels_older_than_the_requests_it_keeps(tmp_path: Path) -> None:
    """The cap drops the oldest requests; connection rows older than what is left go too,
    so a flood of refused connections cannot keep the audit over its cap."""
    store = AuditStore(tmp_path / "audit.db", AuditSettings(retention_days=3650, max_size_mb=1))
    for i in range(4000):
        _open(store, f"h{i}.example", 10, tunnels.Kind.BLOCKED)
    for i in range(60):
        body = json.dumps({"i": i, "pad": os.urandom(30000).hex()}).encode()
        store.record_request(
            RequestRow(
                upstream="anthropic",
                host="h",
                method="POST",
                path="/v1/m",
                request_bytes=len(body),
                verdict="forwarded",
                body=body,
                ts=time.time() - (5 - i / 20) * DAY,
            ),
        )
    done = retention.prune(store)
    assert done.requests > 0 and done.tunnels == 4000
    assert tunnels.rows(store) == []
    store.close()


def test_a_flood_of_refusals_alone_is_kept_under_the_cap(tmp_path: Path) -> None:
    """No request to drop: the oldest connection rows go until the audit fits."""
    store = AuditStore(tmp_path / "audit.db", AuditSettings(max_size_mb=1))
    for i in range(20000):
        _open(store, f"{os.urandom(20).hex()}-{i}.example", 1, tunnels.Kind.BLOCKED)
    assert retention.used_bytes(store.conn()) > 1 << 20
    done = retention.prune(store)
    assert 0 < done.tunnels < 20000 and done.size_after <= 1 << 20
    newest = tunnels.rows(store, 1)[0]
    assert str(newest["host"]).endswith("-19999.example")  # the newest are kept
    store.close()


def test_gate_log_tunnels_lists_each_connection(gate_dirs: dict[str, Path]) -> None:
    store = AuditStore(gate_dirs["data"] / "audit.db")
    a = _open(store, "files.pypi.org", 0.01, tunnels.Kind.TUNNEL, "codex", "run-1")
    tunnels.closed(store, a, 1234, 567_890)
    _open(store, "telemetry.example", 0.001, tunnels.Kind.BLOCKED, "claude-code", "run-2")
    store.close()
    runner = CliRunner()
    out = runner.invoke(cli, ["log", "--tunnels"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert "HOST:PORT" in lines[0] and "UP" in lines[0] and "DOWN" in lines[0]
    assert "files.pypi.org:443" in lines[1] and "1.2 kB" in lines[1] and "568 kB" in lines[1]
    assert "codex" in lines[1] and "run-1" in lines[1] and "tunnel" in lines[1]
    assert "telemetry.example:443" in lines[2] and "blocked" in lines[2]
    as_json = json.loads(
        runner.invoke(cli, ["log", "--tunnels", "--json", "--agent", "codex"]).output
    )
    assert as_json["ok"] is True
    [row] = as_json["tunnels"]
    assert (
        row["host"],
        row["port"],
        row["bytes_out"],
        row["bytes_in"],
        row["agent"],
        row["run_id"],
    ) == ("files.pypi.org", 443, 1234, 567_890, "codex", "run-1")
    assert row["ts"] > 0 and row["ended"] >= row["ts"]
    assert (
        json.loads(runner.invoke(cli, ["log", "--tunnels", "--json", "--run", "nope"]).output)[
            "tunnels"
        ]
        == []
    )


@pytest.mark.parametrize("extra", [["--verdict", "blocked"], ["--follow"], ["--session", "s"]])
def test_gate_log_tunnels_refuses_request_filters(
    extra: list[str], gate_dirs: dict[str, Path]
) -> None:
    AuditStore(gate_dirs["data"] / "audit.db").close()
    out = CliRunner().invoke(cli, ["log", "--tunnels", *extra])
    assert out.exit_code == 2 and "--tunnels takes" in out.output
