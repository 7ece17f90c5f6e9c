"""Who sent each request on a shared gate: in every audit row (HTTP and WebSocket), on
SQLite and PostgreSQL, and in `gate log --user`, `gate show` and `gate export`."""

from __future__ import annotations

import json
import socket
import ssl
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from audit_rows import messages_row
from click.testing import CliRunner
from proxy.test_websocket import FakeWsProvider
from team_kit import make_pki, start_shared
from websockets.sync.client import connect

from fake_provider import FakeProvider
from gate.audit import chain, pg_schema, schema
from gate.audit.records import RequestRow
from gate.audit.store import AuditStore
from gate.cli import cli
from gate.config import AuditSettings, Config, TlsSettings, parse_upstream
from gate.proxy.server import BackgroundGate
from gate.users import Kind, Users
from loopback import read_until

MSG = {"model": "claude-test", "max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}


def invoke(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.output


def test_log_show_and_export_name_the_user(
    provider: FakeProvider, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    server, g = start_shared(
        provider, gate_dirs["data"], tmp_path / "pki", projects=(str(gate_dirs["project"]),)
    )
    try:
        for user in ("alice", "bob", "alice"):
            with g.anthropic(user) as client:
                client.messages.create(**MSG)
        status, _ = g.raw("POST", "/anthropic/v1/messages", body=MSG)  # nobody: refused
        assert status == 401
    finally:
        server.stop()
    code, out = invoke("log", "--user", "alice", "--json")
    rows = json.loads(out)["requests"]
    assert code == 0 and [r["user_name"] for r in rows] == ["alice", "alice"]
    code, out = invoke("log", "--user", "bob")
    assert code == 0 and out.count("user=bob") == 1 and "alice" not in out
    code, out = invoke("log", "--user", "carol")
    assert "no requests recorded matching" in out
    code, out = invoke("show", str(rows[0]["id"]))
    assert code == 0 and "user_name" in out and "alice" in out
    code, out = invoke("export", "--jsonl")
    exported = [json.loads(line) for line in out.splitlines()]
    assert [e["user_name"] for e in exported] == ["alice", "bob", "alice"]
    code, out = invoke("audit", "verify")
    assert code == 0, out


def test_the_chain_covers_the_user(tmp_path: Path) -> None:
    """Editing who sent a request breaks its link; rows without a user hash as before."""
    fields = {
        "id": 1,
        "ts": 1.0,
        "upstream": "anthropic",
        "host": "h",
        "method": "POST",
        "path": "/v1/messages",
        "request_bytes": 1,
        "verdict": "forwarded",
        "withheld": "[]",
        "prev_hash": chain.GENESIS,
    }
    before = chain.record_hash(fields)
    assert chain.record_hash({**fields, "user_name": None}) == before
    alice = chain.record_hash({**fields, "user_name": "alice"})
    assert alice != before and alice != chain.record_hash({**fields, "user_name": "bob"})


def test_a_websocket_row_names_its_user(gate_dirs: dict[str, Path], tmp_path: Path) -> None:
    fake = FakeWsProvider(str(gate_dirs["project"]))
    pki = make_pki(tmp_path / "pki")
    cert, key = pki.issue("gate", server=True)
    token = Users(gate_dirs["data"]).add("alice").agent_token
    config = replace(
        Config(),
        port=0,
        shared=True,
        projects=(str(gate_dirs["project"]),),
        tls=TlsSettings(str(cert), str(key)),
    ).with_upstreams({"openai": parse_upstream("openai", fake.url)})
    server = BackgroundGate(config, gate_dirs["data"])
    gate = server.start()
    try:
        url = f"{gate.base_url.replace('https', 'wss')}/_user/{token}/openai/v1/responses"
        # open_timeout: the handshake (TLS, the user's token, the upstream's upgrade) once
        # took over websockets' default 10 s on a 2-core machine at load 11, and its client
        # then joins its reader thread with no timeout, so the test hung till pytest's.
        with connect(
            url,
            ssl=pki.ssl_context(),
            additional_headers={"authorization": "Bearer sk-fake"},
            open_timeout=60,
        ) as ws:
            ws.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "hello"}))
            while json.loads(ws.recv(timeout=10))["type"] != "response.completed":
                pass
            Users(gate_dirs["data"]).revoke("alice")  # the next frame is refused
            ws.send(json.dumps({"type": "response.create", "model": "gpt-test", "input": "again"}))
            event = json.loads(ws.recv(timeout=10))
            assert event["type"] == "error" and "no longer let in" in event["message"]
        status = _upgrade_status(url.replace(token, "gu_" + "B" * 43), pki.ssl_context())
        assert status.startswith(b"HTTP/1.1 401 ")
    finally:
        server.stop()
        fake.server.shutdown()
    rows = [r for r in AuditStore(gate_dirs["data"] / "audit.db").rows(5) if r["method"] == "WS"]
    # The refused frame is recorded too, as a refused request is, with who sent it.
    assert [r["verdict"] for r in rows] == ["blocked", "forwarded"]
    assert all(r["user_name"] == "alice" and token not in json.dumps(r) for r in rows)
    assert len(fake.frames) == 1


def _upgrade_status(url: str, context: ssl.SSLContext) -> bytes:
    """The status line gate answers a WebSocket upgrade with, read on a socket with a
    timeout. (websockets' own client, refused, joins its reader thread with no timeout;
    a reader blocked in a TLS read it started before the refusal never returns.)"""
    parts = urlsplit(url)
    host, port = parts.hostname or "127.0.0.1", parts.port or 443
    with (
        socket.create_connection((host, port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname=host) as tls,
    ):
        tls.sendall(
            f"GET {parts.path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n".encode()
        )
        answer = read_until(tls, b"\r\n")
    return answer.partition(b"\r\n")[0]


def test_postgresql_keeps_the_user_too(pg_url: str, tmp_path: Path) -> None:
    store = AuditStore(tmp_path / "unused.db", AuditSettings(url=pg_url))
    try:
        for user in ("alice", None, "bob"):
            store.record_request(
                messages_row(b"{}", user_name=user),
            )
        assert [r["user_name"] for r in store.rows(10, user="alice")] == ["alice"]
        assert [r["user_name"] for r in store.rows(10)] == ["bob", None, "alice"]
        verdict = chain.verify(store.conn())
        assert verdict.ok and verdict.requests == 3
        store.conn().execute("UPDATE requests SET user_name = 'mallory' WHERE user_name = 'bob'")
        assert not chain.verify(store.conn()).ok
    finally:
        store.close()


def test_gate_users_add_list_revoke(gate_dirs: dict[str, Path]) -> None:
    code, out = invoke("users", "add", "alice", "--json")
    issued = json.loads(out)
    assert code == 0 and issued["agent_token"].startswith("gu_")
    assert issued["person_token"].startswith("gp_")
    code, out = invoke("users", "add", "alice")
    assert code == 1 and "exists" in out
    code, out = invoke("users", "add", "Bad Name")
    assert code == 1 and "invalid" in out
    assert invoke("users", "add", "root", "--admin")[0] == 0
    code, out = invoke("users", "list")
    assert code == 0 and "alice" in out and "admin" in out
    assert issued["agent_token"] not in out and issued["person_token"] not in out
    assert "gu_" not in invoke("users", "list", "--json")[1]
    assert invoke("users", "revoke", "alice")[0] == 0
    assert "revoked" in invoke("users", "list")[1]
    code, out = invoke("users", "revoke", "alice")
    assert code == 1 and "no active user" in out
    # Revoked, a name may be issued new tokens; the old ones stay refused.
    again = json.loads(invoke("users", "add", "alice", "--json")[1])
    users = Users(gate_dirs["data"])
    assert users.by_token(issued["agent_token"], Kind.AGENT) is None
    assert users.by_token(again["agent_token"], Kind.AGENT).name == "alice"
    assert users.by_token(again["agent_token"], Kind.PERSON) is None


def _downgrade_and_reopen(
    store: AuditStore, version: int, path: Path, settings: AuditSettings
) -> AuditStore:
    """The audit as the gate before user_name wrote it, opened by this gate."""
    db = store.conn()
    db.execute("DROP INDEX requests_user")
    db.execute("ALTER TABLE requests DROP COLUMN user_name")
    db.execute("DELETE FROM schema_version WHERE version = ?", (version,))
    store.close()
    return AuditStore(path, settings)


@pytest.mark.parametrize("engine", ["sqlite", "postgresql"])
def test_an_older_audit_gains_the_column_and_still_verifies(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    settings = AuditSettings(
        url=request.getfixturevalue("pg_url") if engine == "postgresql" else None
    )
    path = tmp_path / "audit.db"
    store = AuditStore(path, settings)
    for n in range(3):
        store.record_request(
            RequestRow(
                upstream="anthropic",
                host="h",
                method="POST",
                path="/v1/x",
                request_bytes=n,
                verdict="forwarded",
                body=b'{"n": %d}' % n,
            ),
        )
    version = len(pg_schema.MIGRATIONS if engine == "postgresql" else schema.MIGRATIONS)
    store = _downgrade_and_reopen(store, version, path, settings)
    try:
        store.record_request(
            RequestRow(
                upstream="anthropic",
                host="h",
                method="POST",
                path="/v1/x",
                request_bytes=9,
                verdict="forwarded",
                body=b"{}",
                user_name="alice",
            ),
        )
        verdict = chain.verify(store.conn())
        assert verdict.ok and verdict.requests == 4, verdict
        assert [r["user_name"] for r in store.rows(10)] == ["alice", None, None, None]
    finally:
        store.close()
