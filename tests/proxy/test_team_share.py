"""A shared gate over real TLS: users' tokens, where they may be, and where they never go."""

from __future__ import annotations

import http.client
import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx2 as httpx
import openai
import pytest
from team_kit import SharedGate, make_pki, start_shared

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from gate.cli import serve
from gate.config import Config, parse_upstream
from gate.proxy.server import Listening
from gate.users import Users

MSG = {"model": "claude-test", "max_tokens": 16, "messages": [{"role": "user", "content": "hello"}]}


@pytest.fixture
def shared(
    provider: FakeProvider, gate_dirs: dict[str, Path], tmp_path: Path
) -> Iterator[SharedGate]:
    server, gate = start_shared(
        provider, gate_dirs["data"], tmp_path / "pki", projects=(str(gate_dirs["project"]),)
    )
    yield gate
    server.stop()


def _rows(data: Path) -> list[dict[str, object]]:
    return list(AuditStore(data / "audit.db", reader=True).rows(100, body=False))


def _everything_written(data: Path) -> bytes:
    """Every byte gate keeps in its data dir (audit, its WAL, log, state files)."""
    out = b""
    for path in data.rglob("*"):
        if path.is_file():
            out += path.read_bytes()
    with sqlite3.connect(data / "audit.db") as db:  # and what the audit holds, decoded
        out += "\n".join(str(r) for r in db.execute("SELECT * FROM requests")).encode()
    return out


def test_the_sdk_in_the_base_url_works_and_the_token_goes_nowhere(shared: SharedGate) -> None:
    token = shared.users["alice"].agent_token
    with shared.anthropic("alice") as client:
        reply = client.messages.create(**MSG)
    assert reply.content[0].text
    seen = shared.provider.seen[-1]
    assert seen.path == "/v1/messages"
    assert token not in seen.path and token not in str(seen.headers)
    assert "x-gate-user-token" not in {k.lower() for k in seen.headers}
    row = _rows(shared.data)[0]
    assert row["user_name"] == "alice" and row["path"] == "/v1/messages"
    assert token.encode() not in _everything_written(shared.data)


def test_the_openai_sdk_sends_the_token_in_a_header(shared: SharedGate) -> None:
    token = shared.users["bob"].agent_token
    with shared.openai("bob") as client:
        reply = client.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}]
        )
    assert reply.choices
    seen = shared.provider.seen[-1]
    assert "x-gate-user-token" not in {k.lower() for k in seen.headers}
    assert token not in str(seen.headers)
    assert _rows(shared.data)[0]["user_name"] == "bob"
    assert token.encode() not in _everything_written(shared.data)


def test_no_token_a_wrong_one_and_a_person_token_are_refused(shared: SharedGate) -> None:
    with (
        shared.anthropic() as client,
        pytest.raises(anthropic.AuthenticationError, match="agent token"),
    ):
        client.messages.create(**MSG)
    wrong = "gu_" + "A" * 43
    status, body = shared.raw("POST", f"/_user/{wrong}/anthropic/v1/messages", body=MSG)
    assert status == 401 and "unknown or revoked" in str(body)
    person = shared.users["alice"].person_token
    status, body = shared.raw("POST", f"/_user/{person}/anthropic/v1/messages", body=MSG)
    assert status == 401 and "person token" in str(body)
    assert shared.provider.seen == [] and _rows(shared.data) == []


def test_a_revoked_token_fails_on_the_next_request(shared: SharedGate) -> None:
    with shared.anthropic("alice") as client:
        client.messages.create(**MSG)
        Users(shared.data).revoke("alice")  # as `gate users revoke alice`, no restart
        with pytest.raises(anthropic.AuthenticationError, match="revoked"):
            client.messages.create(**MSG)  # the same keep-alive connection, too
    assert len(shared.provider.seen) == 1
    with shared.anthropic("bob") as client:  # everyone else carries on
        client.messages.create(**MSG)


def test_plain_http_is_refused_before_the_token_is_read(shared: SharedGate) -> None:
    token = shared.users["alice"].agent_token
    status, body = shared.raw("POST", f"/_user/{token}/anthropic/v1/messages", body=MSG, tls=False)
    assert status == 403 and "HTTPS only" in str(body)
    assert shared.provider.seen == []
    status, body = shared.raw("GET", "/_gate/health", tls=False)  # a health check may
    assert status == 200 and body["ok"] is True


@pytest.mark.parametrize(
    "path",
    [
        "/%5Fuser/{t}/anthropic/v1/messages",  # an escaped underscore
        "//_user/{t}/anthropic/v1/messages",  # a doubled slash
        "/x/../_user/{t}/anthropic/v1/messages",  # a dot segment
        "/_user/{t}/./anthropic//v1/messages",
    ],
)
def test_the_prefix_is_found_however_it_is_spelled(shared: SharedGate, path: str) -> None:
    token = shared.users["alice"].agent_token
    status, _ = shared.raw("POST", path.format(t=token), body=MSG)
    assert status == 200
    assert shared.provider.seen[-1].path == "/v1/messages"
    assert _rows(shared.data)[0]["user_name"] == "alice"
    assert token.encode() not in _everything_written(shared.data)


@pytest.mark.parametrize(
    ("path", "headers", "status", "says"),
    [
        ("/_user/{a}/_user/{a}/anthropic/v1/messages", {}, 400, "twice"),
        ("/_user/{a}/_user/{b}/anthropic/v1/messages", {}, 400, "twice"),
        ("/_user/{a}/anthropic/v1/messages", {"x-gate-user-token": "{b}"}, 400, "two different"),
        ("/_user/{a}/_gate/api/pending", {}, 400, "not before /_gate/"),
        ("/_user/{a}/_run/r1/anthropic/v1/messages", {}, 400, "no runs"),
        ("/_run/r1/anthropic/v1/messages", {"x-gate-user-token": "{a}"}, 400, "no runs"),
        ("/_user/{a}/anthropic/v1/%2e%2e%2fmessages", {}, 400, "cannot read"),
        ("/_user/{a}%2Fanthropic/v1/messages", {}, 400, "cannot read"),
    ],
)
def test_tricks_with_the_prefix_are_refused(
    shared: SharedGate, path: str, headers: dict[str, str], status: int, says: str
) -> None:
    a, b = shared.users["alice"].agent_token, shared.users["bob"].agent_token
    got, body = shared.raw(
        "POST",
        path.format(a=a, b=b),
        body=MSG,
        headers={k: v.format(a=a, b=b) for k, v in headers.items()},
    )
    assert got == status and says in str(body)
    assert shared.provider.seen == []
    written = _everything_written(shared.data)
    assert a.encode() not in written and b.encode() not in written


@pytest.mark.parametrize(
    "path",
    [
        "/_gate/../anthropic/v1/messages",  # review F7: gate's prefix, then out
        "/_gate/x/../../anthropic/v1/messages",
        "/_gate/%2e%2e/anthropic/v1/messages",  # the dots escaped
        "/_gate/%2E%2e/anthropic/v1/messages",
        "/%5Fgate/../anthropic/v1/messages",  # the underscore escaped
        "/_gate/./../anthropic/v1/messages",
        "//_gate/..//anthropic/v1/messages",  # doubled slashes
        "/_gate/health/../../anthropic/v1/messages",  # through the health check's path
    ],
)
def test_gate_s_own_prefix_is_no_way_around_the_user_token(shared: SharedGate, path: str) -> None:
    """TeamAuth decides on the path as the addon routes it, not as it was sent."""
    status, body = shared.raw("POST", path, body=MSG, headers={"x-api-key": "sk-ant-test-x"})
    assert status == 401 and "send your agent token" in str(body), (status, body)
    assert shared.provider.seen == []
    # With a user's token it is an ordinary provider request, and it is that user's.
    token = shared.users["alice"].agent_token
    status, _ = shared.raw("POST", path, body=MSG, headers={"x-gate-user-token": token})
    assert status == 200 and shared.provider.seen[-1].path == "/v1/messages"
    assert _rows(shared.data)[0]["user_name"] == "alice"


@pytest.mark.parametrize(
    "path",
    [
        "/_gate/../_run/r1/anthropic/v1/messages",
        "/_gate/%2e%2e/_run/r1/anthropic/v1/messages",
        "/%5Frun/r1/anthropic/v1/messages",
        "//_run/r1/anthropic/v1/messages",
        "/x/../_run/r1/anthropic/v1/messages",
    ],
)
def test_a_run_is_refused_however_it_is_spelled(shared: SharedGate, path: str) -> None:
    token = shared.users["alice"].agent_token
    for headers in ({}, {"x-gate-user-token": token}):
        status, body = shared.raw("POST", path, body=MSG, headers=headers)
        assert status == 400 and "no runs" in str(body), (path, status, body)
    assert shared.provider.seen == []


@pytest.mark.parametrize(
    "path",
    [
        "/_gate/%2e%2e%2fanthropic/v1/messages",
        "/_gate/..%2Fanthropic/v1/messages",
        "/_gate/..%5canthropic/v1/messages",
    ],
)
def test_a_path_with_no_single_reading_is_refused_on_a_shared_gate(
    shared: SharedGate, path: str
) -> None:
    status, body = shared.raw("POST", path, body=MSG)
    assert status == 400 and "cannot read" in str(body), (status, body)
    assert shared.provider.seen == []


@pytest.mark.parametrize(
    "path", ["/x/../_gate/api/pending", "/%5Fgate/api/pending", "//_gate//api/./pending"]
)
def test_the_control_api_is_what_the_normalised_path_names(shared: SharedGate, path: str) -> None:
    """Any spelling of /_gate/ reaches the control API, which asks for its own token."""
    status, body = shared.raw("GET", path)
    assert status == 401 and "control token" in str(body), (status, body)
    admin = (shared.data / "control.token").read_text().strip()
    status, body = shared.raw("GET", path, headers={"authorization": f"Bearer {admin}"})
    assert status == 200 and body == {"pending": []}, (status, body)
    assert shared.provider.seen == []


@pytest.mark.parametrize("path", ["/_gate/./health", "//_gate/health/", "/%5Fgate/health"])
def test_health_is_what_the_normalised_path_names(shared: SharedGate, path: str) -> None:
    status, body = shared.raw("GET", path, tls=False)
    assert status == 200 and body["ok"] is True


def _cookie_attributes(set_cookie: str) -> set[str]:
    return {a.strip() for a in set_cookie.split(";")[1:]}


@pytest.mark.parametrize("page", ["/_gate/console", "/_gate/ui"])
def test_a_shared_gate_s_sign_in_cookie_is_secure(shared: SharedGate, page: str) -> None:
    """Review F10: the console's sign-in set its cookie without Secure, so a browser would
    later send the admin token in clear to http://HOST:PORT. One function sets it now."""
    admin = (shared.data / "control.token").read_text().strip()
    with shared.http() as client:
        resp = client.get(f"{shared.base}{page}?token={admin}")
    cookie = resp.headers.get("set-cookie", "")
    assert resp.status_code == 303 and cookie.startswith(f"gate_control={admin};"), cookie
    assert _cookie_attributes(cookie) == {"HttpOnly", "SameSite=Strict", "Path=/_gate/", "Secure"}


def test_the_header_and_path_may_agree(shared: SharedGate) -> None:
    token = shared.users["alice"].agent_token
    status, _ = shared.raw(
        "POST",
        f"/_user/{token}/anthropic/v1/messages",
        body=MSG,
        headers={"x-gate-user-token": token},
    )
    assert status == 200 and _rows(shared.data)[0]["user_name"] == "alice"


def test_a_client_that_does_not_trust_the_gate_certificate_stops(shared: SharedGate) -> None:
    with (
        anthropic.Anthropic(
            base_url=f"{shared.base}/anthropic",
            api_key="x",
            max_retries=0,
            http_client=httpx.Client(),
        ) as client,
        pytest.raises(anthropic.APIConnectionError),
    ):
        client.messages.create(**MSG)
    assert shared.provider.seen == []


def test_users_file_is_private_and_holds_no_token(shared: SharedGate) -> None:
    path = shared.data / "users.json"
    assert path.stat().st_mode & 0o777 == 0o600
    text = path.read_text()
    for issued in shared.users.values():
        assert issued.agent_token not in text and issued.person_token not in text


def test_an_unreadable_users_file_lets_nobody_in(shared: SharedGate) -> None:
    (shared.data / "users.json").write_text("{not json")
    with (
        shared.anthropic("alice") as client,
        pytest.raises(anthropic.InternalServerError, match="could not check"),
    ):
        client.messages.create(**MSG)
    assert shared.provider.seen == []


def test_openai_sdk_errors_read_as_auth_errors(shared: SharedGate) -> None:
    with (
        openai.OpenAI(
            base_url=f"{shared.base}/openai/v1",
            api_key="x",
            max_retries=0,
            http_client=shared.http(),
        ) as client,
        pytest.raises(openai.AuthenticationError),
    ):
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert os.environ.get("GATE_DATA_DIR")  # the gate_dirs fixture isolated this test


def _with_cert(g: SharedGate, cert: tuple[Path, Path]) -> anthropic.Anthropic:
    context = g.pki.ssl_context()
    context.load_cert_chain(*cert)
    return closed_after_test(
        anthropic.Anthropic(
            base_url=f"{g.base}/anthropic",
            api_key="x",
            max_retries=0,
            http_client=httpx.Client(verify=context),
        )
    )


def test_a_client_certificate_signs_its_user_in(
    provider: FakeProvider, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    server, g = start_shared(
        provider,
        gate_dirs["data"],
        tmp_path / "pki",
        client_ca=True,
        projects=(str(gate_dirs["project"]),),
    )
    try:
        alice = g.pki.issue("alice", server=False)
        with _with_cert(g, alice) as client:
            client.messages.create(**MSG)
        assert _rows(g.data)[0]["user_name"] == "alice"
        with g.anthropic("bob") as client:  # a token still works without a certificate
            client.messages.create(**MSG)
        assert _rows(g.data)[0]["user_name"] == "bob"
        status, _ = g.raw(
            "POST", f"/_user/{g.users['bob'].agent_token}/anthropic/v1/messages", body=MSG
        )  # no certificate, bob's token
        assert status == 200
        context = g.pki.ssl_context()
        context.load_cert_chain(*alice)
        with httpx.Client(verify=context) as http:  # alice's certificate, bob's token
            reply = http.post(
                f"{g.base}/anthropic/v1/messages",
                json=MSG,
                headers={"x-gate-user-token": g.users["bob"].agent_token},
            )
        assert reply.status_code == 400 and "different users" in reply.text
        with (
            _with_cert(g, g.pki.issue("carol", server=False)) as client,
            pytest.raises(anthropic.AuthenticationError, match="CN names no active user"),
        ):
            client.messages.create(**MSG)
        stranger = make_pki(tmp_path / "other", "another CA").issue("alice", server=False)
        with _with_cert(g, stranger) as client, pytest.raises(anthropic.APIConnectionError):
            client.messages.create(**MSG)  # the handshake fails: not our CA
        Users(g.data).revoke("alice")
        with _with_cert(g, alice) as client, pytest.raises(anthropic.AuthenticationError):
            client.messages.create(**MSG)
        assert len(provider.seen) == 3
    finally:
        server.stop()


def test_gate_run_does_not_reuse_a_shared_gate(
    provider: FakeProvider, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """Its agent would speak plain HTTP with no token: `gate run` starts a gate of its own.
    (`gate pending` does find the shared one, over TLS: its registration names the
    certificate it serves, tests/ask/test_team_cli.py.)"""
    server, g = start_shared(provider, gate_dirs["data"], tmp_path / "pki", advertise=True)
    try:
        status, health = g.raw("GET", "/_gate/health")
        assert status == 200 and health["shared"] is True
        [registered] = (gate_dirs["data"] / "control").glob("*.json")
        assert json.loads(registered.read_text())["tls_cert"].endswith("gate.crt")
        config = Config(port=0).with_upstreams(
            {"anthropic": parse_upstream("anthropic", provider.url)}
        )
        base, started = serve._find_or_start(config, gate_dirs["data"], False)
        assert started is not None and base != g.base
        started.stop()
    finally:
        server.stop()


def test_a_gate_for_one_person_takes_tokens_off_too(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """An agent wired for a shared gate and pointed at a local one by mistake: its token
    is not forwarded there either (and signs nobody in: a local gate has no users)."""
    token = "gu_" + "C" * 43
    conn = http.client.HTTPConnection("127.0.0.1", gate.port, timeout=30)
    conn.request(
        "POST",
        f"/_user/{token}/anthropic/v1/messages",
        body=json.dumps(MSG),
        headers={"content-type": "application/json", "x-gate-user-token": token},
    )
    assert conn.getresponse().status == 200
    conn.close()
    seen = provider.seen[-1]
    assert seen.path == "/v1/messages" and token not in str(seen.headers)
    assert _rows(gate_dirs["data"])[0]["user_name"] is None
    assert token.encode() not in _everything_written(gate_dirs["data"])
