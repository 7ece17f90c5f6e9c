"""The audit on a real PostgreSQL: the same rows, bodies, chain, search, report and export as
on SQLite; many gates writing at once (one killed mid-request); retention by partition; fail
closed when the database goes away; a newer schema refused."""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
import time
from pathlib import Path
from typing import Any

import httpx2 as httpx
import psycopg
import pytest
import zstandard
from audit import serve_kit

import postgres
from fake_provider import FakeProvider
from gate.audit import chain, chunks, pg_schema, report, retention, search
from gate.audit.records import RequestRow, Response, Usage
from gate.audit.store import AuditError, AuditStore
from gate.config import AuditSettings
from messages import conversation, tool_turn
from screen.secrets_corpus import Gen


def _token() -> str:
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


def _rows(seed: int, n: int) -> list[dict[str, Any]]:
    """Rows as a gate writes them: two sessions' growing conversations, days apart."""
    rand = random.Random(seed)
    out, convo = [], {"s:a": [], "s:b": []}  # type: ignore[var-annotated]
    start = time.time() - 5 * 86400
    for i in range(n):
        session = rand.choice(list(convo))
        convo[session].append(
            {
                "role": "user",
                "content": f"turn {i} quick brown fox"
                f" {rand.random()} " + "lorem ipsum " * rand.randint(1, 80),
            }
        )
        body = json.dumps({"model": "m", "messages": convo[session]}).encode()
        out.append(
            {
                "ts": start + i * 3600.0,
                "run_id": "r1",
                "agent": rand.choice(["a", "b"]),
                "upstream": "anthropic",
                "host": "api.anthropic.com",
                "method": "POST",
                "path": "/v1/messages",
                "model": rand.choice(["m1", "m2", None]),
                "request_bytes": len(body),
                "verdict": rand.choice(["forwarded", "modified", "blocked"]),
                "withheld": [{"kind": "secret", "rule": "github", "count": 2}]
                if i % 3 == 0
                else [],
                "reason": "why" if i % 5 == 0 else None,
                "body": body,
                "session": session,
            }
        )
    return out


def _fill(store: AuditStore, rows: list[dict[str, Any]]) -> None:
    for n, row in enumerate(rows):
        rid = store.record_request(RequestRow(**dict(row)))
        if n % 2:
            store.record_response(
                rid, Response(status=200, latency_ms=12.5 + n, usage=store_usage(n))
            )


def store_usage(n: int) -> Any:

    return Usage(input_tokens=100 + n, output_tokens=n, cache_read_tokens=None)


def test_both_engines_read_back_the_same(pg_url: str, tmp_path: Path) -> None:
    """Every read path the CLI uses gives the same answer on both engines, down to the
    chain's head hash: the same rows hash the same wherever they are kept."""
    rows = _rows(3, 40)
    lite = AuditStore(tmp_path / "audit.db")
    pg = AuditStore(tmp_path / "unused.db", AuditSettings(url=pg_url))
    assert not (tmp_path / "unused.db").exists()
    for store in (lite, pg):
        _fill(store, rows)
    assert list(lite.rows(100)) == list(pg.rows(100))
    assert list(lite.rows(5, since=rows[20]["ts"], agent="a", body=False)) == list(
        pg.rows(5, since=rows[20]["ts"], agent="a", body=False)
    )
    for rid in range(1, 41):
        assert lite.get(rid) == pg.get(rid)
        assert pg.body_of(rid) == rows[rid - 1]["body"]  # byte-exact
        assert lite.previous_in_session(rid) == pg.previous_in_session(rid)
        assert lite.chunk_ids(rid) == pg.chunk_ids(rid)
    a, b = chain.verify(lite.conn()), chain.verify(pg.conn())
    assert a.ok and b.ok and a == b and a.head is not None
    for text in ("quick brown fox", "turn 7", "LOREM   ipsum", "nothing like this"):
        assert search.text_search(lite, text) == search.text_search(pg, text)

    def match(s: str) -> list[tuple[int, int, str]]:
        i = s.find("turn 12 ")
        return [(i, i + 7, "v")] if i >= 0 else []

    assert search.scan(lite, match) == search.scan(pg, match)
    for since in (None, rows[10]["ts"]):
        mine, theirs = (report.build(s.conn(), since).as_json() for s in (lite, pg))
        mine.pop("generated"), theirs.pop("generated")
        assert mine == theirs and mine["totals"]["requests"] > 0
        assert list(report.export_lines(lite.conn(), since)) == list(
            report.export_lines(pg.conn(), since)
        )
    lite.close()
    pg.close()


def test_retention_drops_whole_days_and_the_chain_still_verifies(
    pg_url: str, tmp_path: Path
) -> None:
    store = AuditStore(tmp_path / "a.db", AuditSettings(url=pg_url, retention_days=2))
    rows = _rows(5, 120)  # five days, one an hour
    _fill(store, rows)
    days = pg_schema.partitions(store.conn())  # type: ignore[arg-type]
    assert len(days) >= 5
    done = retention.prune(store)
    left = pg_schema.partitions(store.conn())  # type: ignore[arg-type]
    cutoff = time.time() - 2 * 86400
    assert done.requests > 0 and left == [d for d in days if (d[0] + 1) * 86400 > cutoff]
    kept = list(store.rows(1000, body=False))
    assert len(kept) == 120 - done.requests
    assert min(r["id"] for r in kept) == done.requests + 1  # a prefix went
    verdict = chain.verify(store.conn())
    assert verdict.ok and verdict.requests == len(kept)
    for r in kept:  # chunks other days shared are still there
        assert store.body_of(r["id"]) == rows[r["id"] - 1]["body"]
    # An edit after retention is still caught.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE requests SET model = 'x' WHERE id = %s", (kept[0]["id"],))
    assert not chain.verify(store.conn()).ok
    store.close()


def test_a_newer_schema_is_refused_and_left_untouched(pg_url: str, tmp_path: Path) -> None:
    AuditStore(tmp_path / "a.db", AuditSettings(url=pg_url)).close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_version VALUES (99)")
    with pytest.raises(AuditError, match="newer than this gate"):
        AuditStore(tmp_path / "a.db", AuditSettings(url=pg_url))
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone() == (99,)


def test_an_unreachable_database_is_an_error_naming_it_without_its_password(tmp_path: Path) -> None:
    url = f"postgresql://gate:hunter2x@127.0.0.1:{serve_kit.free_port()}/none"
    with pytest.raises(AuditError) as info:
        AuditStore(tmp_path / "a.db", AuditSettings(url=url, lock_timeout_ms=1000))
    text = info.value.diagnostics() if hasattr(info.value, "diagnostics") else str(info.value)
    assert "127.0.0.1" in str(text) and "hunter2x" not in str(text)


def test_a_database_that_goes_away_blocks_writes_until_it_is_back(
    pg_server: postgres.Server, tmp_path: Path
) -> None:
    url = pg_server.new_database()
    store = AuditStore(tmp_path / "a.db", AuditSettings(url=url, lock_timeout_ms=2000))
    row = _rows(1, 1)[0]
    store.record_request(RequestRow(**dict(row)))
    postgres.restart(pg_server, stop=True)
    try:
        with pytest.raises(AuditError, match="the request was not sent"):
            store.record_request(RequestRow(**dict(row)))
    finally:
        postgres.restart(pg_server, stop=False)
    rid = store.record_request(RequestRow(**dict(row)))  # a fresh connection from the pool
    assert rid == 2 and chain.verify(store.conn()).ok
    store.close()


def test_a_connection_held_across_a_restart_is_replaced_not_a_refused_request(
    pg_server: postgres.Server, tmp_path: Path
) -> None:
    """Each thread keeps its connection. A restart breaks them all, but only the thread
    that writes next learns it: a thread that last wrote before the restart must write
    on a fresh connection, not refuse its request (CI saw a gate answer 400 so)."""
    url = pg_server.new_database()
    store = AuditStore(tmp_path / "a.db", AuditSettings(url=url, lock_timeout_ms=2000))
    row = _rows(1, 1)[0]
    written: list[int | BaseException] = []

    def write() -> None:
        try:
            written.append(store.record_request(RequestRow(**dict(row))))
        except BaseException as exc:  # handed to the test thread
            written.append(exc)

    store.record_request(RequestRow(**dict(row)))
    held = store.conn()
    postgres.restart(pg_server, stop=True)
    postgres.restart(pg_server, stop=False)
    other = threading.Thread(target=write)  # a thread with no connection yet
    other.start()
    other.join()
    assert written == [2]
    assert store.conn() is held and not held.broken  # not yet known
    write()  # this thread's connection is stale
    assert written == [2, 3]
    assert store.conn() is not held and chain.verify(store.conn()).ok
    store.close()


def _session_bodies(seed: int, turns: int, token: str) -> list[bytes]:
    rand = random.Random(seed)
    done: list[list[dict[str, Any]]] = []
    out = []
    for t in range(turns):
        result = (f"GITHUB_TOKEN={token}\n" if t == 0 else "") + "\n".join(
            f"{i}\tline {rand.random()}" for i in range(rand.randint(5, 200))
        )
        done.append(tool_turn(f"toolu_{seed}_{t}", "Bash", {"command": f"cat f{t}"}, result))
        out.append(json.dumps(conversation("/p", *done)).encode())
    return out


def test_two_gates_write_at_once_one_is_killed_and_nothing_is_lost(
    pg_url: str,
    provider: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    gate_dirs: dict[str, Path],
) -> None:
    """Two `gate serve`s on one database, four interleaved sessions each; one gate gets
    SIGKILL while requests are in flight. Every request the provider received is in the
    audit, byte-exact; the chain verifies; the redacted token is in no table."""
    monkeypatch.setenv("GATE_AUDIT_URL", pg_url)
    config = gate_dirs["config"]
    config.mkdir(exist_ok=True)
    (config / "config.yaml").write_text("ask: never\n")  # nobody is there to answer
    provider.sse_delay = 0.05
    gates = []
    for n in range(2):
        monkeypatch.setenv("GATE_DATA_DIR", str(tmp_path / f"data{n}"))
        gates.append(serve_kit.start(provider.url))
    token = _token()

    def agent(base: str, seed: int) -> None:
        for body in _session_bodies(seed, 12, token):
            try:
                serve_kit.post(base, body, **{"x-claude-code-session-id": f"s{seed}"})
            except httpx.HTTPError:
                return  # its gate is gone

    threads = [threading.Thread(target=agent, args=(gates[s % 2][1], s)) for s in range(8)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 60
    while len(provider.seen) < 16 and time.monotonic() < deadline:
        time.sleep(0.02)
    os.kill(gates[0][0].pid, signal.SIGKILL)
    for t in threads:
        t.join(timeout=120)
    gates[0][0].communicate(timeout=30)
    gates[1][0].send_signal(signal.SIGINT)
    gates[1][0].communicate(timeout=60)
    store = AuditStore(tmp_path / "x.db", AuditSettings(url=pg_url))
    verdict = chain.verify(store.conn())
    assert verdict.ok, verdict
    rows = list(store.rows(10_000, body=False))
    assert verdict.requests == len(rows) >= len(provider.seen) > 16
    recorded = {store.body_of(r["id"]) for r in rows if r["verdict"] != "blocked"}
    assert {p.body for p in provider.seen} <= recorded
    # a request cut short by the kill was on its way: what of it left was recorded too
    assert all(any(r.startswith(c.body) for r in recorded) for c in provider.cut)
    assert all(token.encode() not in p.body for p in provider.seen)
    assert token not in _everything(pg_url)
    store.close()


def _everything(url: str) -> str:
    """Every table's every value as text, blocks decompressed."""
    out = []
    with psycopg.connect(url) as conn:
        names = [
            r[0]
            for r in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        ]
        for name in names:
            for row in conn.execute(f"SELECT * FROM {name}"):  # noqa: S608 (catalog names)
                for value in row:
                    if isinstance(value, bytes):
                        with contextlib.suppress(zstandard.ZstdError):  # not every bytea is zstd
                            value = chunks.unpack(value)
                        value = value.decode("utf-8", "replace")
                    out.append(str(value))
    return "\n".join(out)


def test_every_audit_command_prints_the_same_on_both_engines(
    pg_url: str, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from click.testing import CliRunner

    from gate.cli import cli

    rows = _rows(11, 30)
    for store in (
        AuditStore(gate_dirs["data"] / "audit.db"),
        AuditStore(gate_dirs["data"] / "unused.db", AuditSettings(url=pg_url)),
    ):
        _fill(store, rows)
        store.close()
    values = gate_dirs["project"] / "leak.env"
    values.write_text("A=turn 12 quick\nB=never-there-at-all\n")
    commands = [
        ["log"],
        ["log", "--json", "--agent", "a"],
        ["show", "5", "--json", "--body"],
        ["show", "7", "--new"],
        ["search", "quick brown fox", "--json"],
        ["search", "lorem"],
        ["search", "--value-of", str(values), "--json"],
        ["report", "--json"],
        ["report"],
        ["export"],
        ["audit", "verify", "--json"],
        ["audit", "verify"],
    ]

    def run(args: list[str]) -> tuple[int, str]:
        result = CliRunner().invoke(cli, args)
        out = result.stdout
        if args[0] == "report":  # when it was generated
            out = "\n".join(line for line in out.splitlines() if "generated" not in line)
        if args == ["audit", "verify", "--json"]:  # PostgreSQL also says what the chain spans
            data = json.loads(out)
            data.pop("chain", None)
            out = json.dumps(data)
        elif args[:2] == ["audit", "verify"]:
            out = "\n".join(
                line for line in out.splitlines() if "one chain for every gate" not in line
            )
        return result.exit_code, out

    monkeypatch.delenv("GATE_AUDIT_URL", raising=False)
    lite = [run(c) for c in commands]
    monkeypatch.setenv("GATE_AUDIT_URL", pg_url)
    pg = [run(c) for c in commands]
    for args, a, b in zip(commands, lite, pg, strict=True):
        assert a == b, args
        assert a[1].strip(), args
    result = CliRunner().invoke(cli, ["audit", "verify", "--json"])
    assert (
        result.exit_code == 0 and "one chain for every gate" in json.loads(result.stdout)["chain"]
    )


def test_a_real_gate_blocks_while_its_database_is_down_and_serves_once_it_is_back(
    pg_server: postgres.Server,
    provider: FakeProvider,
    monkeypatch: pytest.MonkeyPatch,
    gate_dirs: dict[str, Path],
) -> None:
    """While the database is down each request waits audit.lock_timeout_ms for it, twice
    (its row, then the blocked row): 2 s here, not the default 5 s. Once it is back the next
    request is served, however long the outage was (the pool's retries give up after the
    same time, and the next write connects at once)."""
    monkeypatch.setenv("GATE_AUDIT_URL", pg_server.new_database())
    gate_dirs["config"].mkdir(exist_ok=True)
    (gate_dirs["config"] / "config.yaml").write_text("audit:\n  lock_timeout_ms: 2000\n")
    proc, base = serve_kit.start(provider.url)
    body = b'{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}'
    try:
        assert serve_kit.post(base, body).status_code == 200
        postgres.restart(pg_server, stop=True)
        try:
            reply = serve_kit.post(base, body)
        finally:
            postgres.restart(pg_server, stop=False)
        assert reply.status_code >= 400 and "audit" in reply.text
        assert len(provider.seen) == 1  # nothing was forwarded unrecorded
        assert serve_kit.post(base, body).status_code == 200
        assert len(provider.seen) == 2
    finally:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=60)
    assert "audit" in err  # the reason is logged


@pytest.mark.parametrize("value", ["mysql://u@h/db", "sqlite:///x.db", "db.internal", 5, True])
def test_audit_url_must_be_a_postgresql_url_and_is_named_in_the_error(
    tmp_path: Path, value: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gate.config import load
    from gate.errors import ConfigError

    path = tmp_path / "config.yaml"
    path.write_text(json.dumps({"audit": {"url": value}}))
    with pytest.raises(ConfigError) as info:
        load(path)
    assert "audit.url" in info.value.diagnostics()
    path.write_text(json.dumps({"audit": {"uri": "postgresql://h/db"}}))
    with pytest.raises(ConfigError, match="unknown key 'uri'"):
        load(path)
    if isinstance(value, str):
        monkeypatch.setenv("GATE_AUDIT_URL", value)
        with pytest.raises(ConfigError) as info:
            AuditStore(tmp_path / "a.db")
        assert "GATE_AUDIT_URL" in info.value.diagnostics()
        assert not (tmp_path / "a.db").exists()  # no SQLite fallback
