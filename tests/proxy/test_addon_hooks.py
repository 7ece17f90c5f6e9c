"""GateAddon's hooks and fail-closed paths, driven with mitmproxy's test flows and parts
passed in (no listener, no patching of gate's code)."""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from mitmproxy import command, http
from mitmproxy.connection import ConnectionState
from mitmproxy.flow import Flow
from mitmproxy.test import taddons, tflow
from mitmproxy.websocket import WebSocketMessage

from ask.ask_kit import github_token
from gate import runs
from gate.audit.records import RequestRow
from gate.audit.store import AuditStore
from gate.config import AskConfig, Config, parse_upstream
from gate.errors import ConfigError
from gate.lock import BRIDGE_SOURCE
from gate.proxy.addon import GateAddon
from gate.proxy.pipeline import UNCHECKED
from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import IndexStore
from gate.screen.request import Blocked, Outbound, Screens, Verdict, screen
from gate.screen.secrets import Scanner
from gate.users import Users

UPSTREAM = "http://127.0.0.1:9"
MSG = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


class FullAudit(AuditStore):
    """An audit whose disk is full: every row written fails."""

    def record_request(self, row: RequestRow) -> int:
        raise sqlite3.OperationalError("database or disk is full")


@pytest.fixture
def audit(tmp_path: Path) -> Iterator[AuditStore]:
    store = AuditStore(tmp_path / "audit.db")
    yield store
    store.close()


def _addon(
    audit: AuditStore, data: Path, policies: PolicyStore | None = None, **parts: Any
) -> GateAddon:
    config = Config(ask=AskConfig(mode="never")).with_upstreams(
        {"anthropic": parse_upstream("anthropic", UPSTREAM)}
    )
    parts.setdefault("screens", Screens(None, SecretScreen(Scanner(), b"unit-test-key")))
    return GateAddon(config, data, policies or PolicyStore(), audit, **parts)


def _flow(path: str = "/anthropic/v1/messages", body: Any = MSG, **headers: str) -> Any:
    req = http.Request.make(
        "POST",
        f"http://127.0.0.1:8787{path}",
        b"",
        {"content-type": "application/json", "host": "127.0.0.1:8787"},
    )
    # The bytes and headers as they came (make() would encode the body as they say).
    req.raw_content = body if isinstance(body, bytes) else json.dumps(body).encode()
    req.headers.update(headers)
    return tflow.tflow(req=req)


def _run(addon: GateAddon, flow: Any) -> Any:
    async def hook() -> None:
        try:
            await addon.request(flow)
        finally:
            addon.offload.close()

    with taddons.context(addon):
        asyncio.run(hook())
    return flow


def _refused(flow: Any, status: int, words: str) -> str:
    assert flow.response is not None, "the request was let through"
    assert flow.response.status_code == status
    assert flow.response.headers["x-gate-blocked"] == "1"
    message = json.loads(flow.response.content)["error"]["message"]
    assert words in message
    return str(message)


def test_a_clean_request_is_recorded_and_routed_upstream(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    flow = _run(_addon(audit, gate_dirs["data"]), _flow())
    assert flow.response is None
    assert (flow.request.host, flow.request.port, flow.request.path) == (
        "127.0.0.1",
        9,
        "/v1/messages",
    )
    [row] = list(audit.rows(5))
    assert row["verdict"] == "forwarded" and row["id"] == flow.metadata["gate_row"]


def test_a_secret_is_redacted_in_what_is_recorded_and_sent(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    token = github_token()
    body = MSG | {"messages": [{"role": "user", "content": f"GITHUB_TOKEN={token}"}]}
    flow = _run(_addon(audit, gate_dirs["data"]), _flow(body=body))
    assert flow.response is None
    assert token.encode() not in flow.request.content
    [row] = list(audit.rows(5))
    recorded = row["body"] if isinstance(row["body"], bytes) else row["body"].encode()
    assert row["verdict"] == "modified" and token.encode() not in recorded


def test_a_crash_in_screening_blocks_the_request(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    def crash(req: Outbound, *_: object) -> Verdict:
        raise RuntimeError("injected")

    flow = _run(_addon(audit, gate_dirs["data"], screener=crash), _flow())
    _refused(flow, 500, "could not screen this request (RuntimeError)")
    [row] = list(audit.rows(5))
    assert row["verdict"] == "blocked" and row["body"] is None


def test_a_failed_audit_write_blocks_the_request(
    tmp_path: Path, gate_dirs: dict[str, Path]
) -> None:
    full = FullAudit(tmp_path / "full.db")
    try:
        flow = _run(_addon(full, gate_dirs["data"]), _flow())
    finally:
        full.close()
    _refused(flow, 500, "OperationalError")


@pytest.mark.parametrize(
    ("body", "headers", "words"),
    [
        (b"{not json", {}, "cannot screen this request"),
        (b'{"model": "m", "model": "n", "messages": []}', {}, "model"),
        (b'{"model": NaN, "messages": []}', {}, "cannot screen this request"),
        (b"\x00\x01garbage", {"content-encoding": "x-custom"}, "unknown content-coding"),
        (b"not gzip at all", {"content-encoding": "gzip"}, "gzip"),
    ],
)
def test_a_body_gate_cannot_read_one_way_only_is_blocked(
    audit: AuditStore, gate_dirs: dict[str, Path], body: bytes, headers: dict[str, str], words: str
) -> None:
    flow = _run(_addon(audit, gate_dirs["data"]), _flow(body=body, **headers))
    _refused(flow, 400, words)
    assert [r["verdict"] for r in audit.rows(5)] == ["blocked"]


def test_an_unknown_route_is_answered_by_gate(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    flow = _run(_addon(audit, gate_dirs["data"]), _flow(path="/nowhere/v1/messages"))
    assert flow.response is not None and flow.response.status_code == 404
    assert "anthropic" in flow.response.text
    assert list(audit.rows(5)) == []


def test_an_unknown_run_is_refused(audit: AuditStore, gate_dirs: dict[str, Path]) -> None:
    flow = _run(
        _addon(audit, gate_dirs["data"]), _flow(path="/_run/0123456789abcdef/anthropic/v1/messages")
    )
    _refused(flow, 400, "gate does not know run '0123456789abcdef'")


def test_a_request_through_the_lock_must_name_its_run(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    flow = _flow()
    flow.client_conn.peername = (BRIDGE_SOURCE, 40000)
    _refused(_run(_addon(audit, gate_dirs["data"]), flow), 400, "must name its run")


def test_a_websocket_upgrade_gate_cannot_screen_is_refused(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    flow = _flow(upgrade="websocket", connection="upgrade")
    _refused(_run(_addon(audit, gate_dirs["data"]), flow), 400, "WebSocket")


def test_a_websocket_frame_gate_did_not_set_up_is_dropped(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    addon = _addon(audit, gate_dirs["data"])
    flow = tflow.twebsocketflow()
    [*_, last] = flow.websocket.messages
    assert last.from_client is False
    flow.websocket.messages.append(type(last)(1, True, b'{"type":"response.create"}'))

    async def hook() -> None:
        await addon.websocket_message(flow)
        addon.offload.close()

    with taddons.context(addon):
        asyncio.run(hook())
    assert flow.websocket.messages[-1].dropped


@pytest.mark.parametrize(
    ("size", "coding", "on_loop"),
    [(1_000, None, True), (300_000, None, False), (1_000, "gzip", False)],
)
def test_a_small_plain_body_is_screened_on_the_loop_a_large_or_coded_one_on_a_thread(
    audit: AuditStore, gate_dirs: dict[str, Path], size: int, coding: str | None, on_loop: bool
) -> None:
    """The hop to a thread costs more than screening a small body; a large one, or one that
    may inflate (any content-coding), is screened off the loop. The row is written on a
    thread either way (it may wait for SQLite's lock)."""
    where: dict[str, str] = {}

    def screener(req: Outbound, *rest: Any) -> Verdict:
        where["screened"] = threading.current_thread().name
        return screen(req, *rest)

    class Recording(AuditStore):
        def record_request(self, row: RequestRow) -> int:
            where["recorded"] = threading.current_thread().name
            return super().record_request(row)

    body = json.dumps(MSG | {"messages": [{"role": "user", "content": "x" * size}]}).encode()
    headers = {}
    if coding:
        body, headers = gzip.compress(body), {"content-encoding": coding}
    recording = Recording(gate_dirs["data"] / "recorded.db")
    try:
        flow = _run(
            _addon(recording, gate_dirs["data"], screener=screener), _flow(body=body, **headers)
        )
        assert flow.response is None
        assert where["screened"].startswith("gate-screen") is not on_loop
        assert where["recorded"].startswith("gate-screen")
    finally:
        recording.close()


class Walks(IndexStore):
    """An index store that notes the thread of each walk of a project (a build or rebuild)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.walked: list[str] = []

    def refresh(self, *args: Any, **kwargs: Any) -> Any:
        index = super().refresh(*args, **kwargs)  # raises WalkNeeded where it may not walk
        self.walked.append(threading.current_thread().name)
        return index


def test_a_small_body_is_screened_off_the_loop_while_its_index_must_be_built(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """Building a denied-file index walks the project: never on the loop. The first small
    request (no index yet) and one after a file appeared in a walked directory are screened
    on a thread, which builds the index; a small one against a current index, on the loop."""
    (gate_dirs["project"] / ".env").write_text("TOKEN=abc\n")
    where: list[str] = []

    def screener(req: Outbound, *rest: Any) -> Verdict:
        verdict = screen(req, *rest)  # raises before it returns where it may not walk
        where.append(threading.current_thread().name)
        return verdict

    indexes = Walks(projects=(str(gate_dirs["project"]),))
    screens = Screens(indexes, SecretScreen(Scanner(), b"unit-test-key"))
    body, policies = json.dumps(MSG).encode(), PolicyStore()  # one gate's, request to request
    for step in ("cold", "warm", "changed"):
        if step == "changed":
            time.sleep(0.01)  # a directory's mtime must move
            (gate_dirs["project"] / "new.txt").write_text("x")
        addon = _addon(audit, gate_dirs["data"], policies, screener=screener, screens=screens)
        assert _run(addon, _flow(body=body)).response is None
    assert [name.startswith("gate-screen") for name in where] == [True, False, True]
    assert indexes.walked and all(name.startswith("gate-screen") for name in indexes.walked)


def test_a_project_a_request_only_states_is_walked_off_the_loop(
    audit: AuditStore, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """A request with no run that states a working directory gate has never seen names a
    project whose index must be built before it is screened: not on the loop, though no
    caller could know that project before reading the body. Its denied value is withheld."""
    other = gate_dirs["project"].parent / "elsewhere"
    (other / ".git").mkdir(parents=True)
    value = "stated" + os.urandom(8).hex()
    (other / ".env").write_text(f"TOKEN={value}\n")
    indexes = Walks(projects=(str(gate_dirs["project"]),))
    screens = Screens(indexes, SecretScreen(Scanner(), b"unit-test-key"))
    policies = PolicyStore()
    # First a request that states nothing: every index it needs is built (on a thread).
    first = _addon(audit, gate_dirs["data"], policies, screens=screens)
    assert _run(first, _flow(body=json.dumps(MSG).encode())).response is None
    built = len(indexes.walked)
    stated = MSG | {
        "messages": [{"role": "user", "content": f"Working directory: {other}\n\nTOKEN={value}"}]
    }
    addon = _addon(audit, gate_dirs["data"], policies, screens=screens)
    flow = _run(addon, _flow(body=json.dumps(stated).encode()))
    assert flow.response is None
    assert value.encode() not in flow.request.content
    assert len(indexes.walked) > built  # the stated project's index was built for it
    assert all(name.startswith("gate-screen") for name in indexes.walked), indexes.walked


# -- every other fail-closed path of the request hook ----------------------------------


class CrashingIndexes(IndexStore):
    """Denied-file indexes whose list of known values cannot be read: a block's reason can
    then not be checked for findings."""

    def known(self) -> list[Any]:
        raise RuntimeError("injected")


def _blocked_by(message: str) -> Any:
    def screener(req: Outbound, *_: object) -> Verdict:
        raise Blocked(message)

    return screener


def test_a_path_no_single_reading_exists_for_is_refused(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    flow = _run(_addon(audit, gate_dirs["data"]), _flow(path="/anthropic/v1%2Fmessages"))
    _refused(flow, 400, "cannot route this request")
    assert [r["verdict"] for r in audit.rows(5)] == ["blocked"]


def test_a_gate_error_while_screening_blocks_with_what_to_do(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    def broken_rules(req: Outbound, *_: object) -> Verdict:
        raise ConfigError("a rule file is malformed", where=".gate/rules.yaml:3")

    flow = _run(_addon(audit, gate_dirs["data"], screener=broken_rules), _flow())
    assert ".gate/rules.yaml:3" in _refused(flow, 400, "a rule file is malformed")
    assert [r["verdict"] for r in audit.rows(5)] == ["blocked"]


@pytest.mark.parametrize(
    ("raw", "headers", "words"),
    [
        (
            json.dumps(MSG).encode("utf-16"),
            {"content-type": "application/json; charset=utf-16"},
            "UTF-8",
        ),
        (gzip.compress(b" \n ", mtime=0), {"content-encoding": "gzip"}, "decodes to nothing"),
    ],
    ids=["charset", "empty-after-decoding"],
)
def test_a_body_read_otherwise_than_gate_reads_it_is_refused(
    audit: AuditStore, gate_dirs: dict[str, Path], raw: bytes, headers: dict[str, str], words: str
) -> None:
    flow = _run(_addon(audit, gate_dirs["data"]), _flow(body=raw, **headers))
    _refused(flow, 400, words)


def test_a_signed_body_gate_must_edit_never_leaves(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    token = github_token()
    body = MSG | {"messages": [{"role": "user", "content": f"GITHUB_TOKEN={token}"}]}
    sig = "AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/bedrock/aws4_request"
    flow = _run(_addon(audit, gate_dirs["data"]), _flow(body=body, authorization=sig))
    _refused(flow, 400, "signed (AWS SigV4)")
    [row] = list(audit.rows(5))
    assert row["verdict"] == "blocked" and row["body"] is None


def test_a_signed_compressed_body_is_refused(audit: AuditStore, gate_dirs: dict[str, Path]) -> None:
    raw = gzip.compress(json.dumps(MSG).encode(), mtime=0)
    flow = _flow(body=raw, authorization="AWS4-HMAC-SHA256 x", **{"content-encoding": "gzip"})
    _refused(_run(_addon(audit, gate_dirs["data"]), flow), 400, "send it uncompressed")


def test_a_block_reason_holding_a_secret_is_told_and_recorded_without_it(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    token = github_token()
    addon = _addon(audit, gate_dirs["data"], screener=_blocked_by(f"refused near {token}"))
    message = _refused(_run(addon, _flow()), 400, "refused near")
    [row] = list(audit.rows(5))
    assert token not in message and token not in (row["reason"] or "")


def test_a_block_reason_that_cannot_be_checked_is_replaced_by_the_generic_one(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """Fail closed: a reason gate could not check for findings is never told or written."""
    screens = Screens(CrashingIndexes(), SecretScreen(Scanner(), b"unit-test-key"))
    addon = _addon(audit, gate_dirs["data"], screens=screens, screener=_blocked_by("secret-ish"))
    message = _refused(_run(addon, _flow()), 400, UNCHECKED)
    [row] = list(audit.rows(5))
    assert "secret-ish" not in message and row["reason"] == UNCHECKED


def test_a_flow_forward_mode_already_answered_is_left_alone(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    flow = _flow()
    flow.response = http.Response.make(403, b"refused by the egress policy")
    _run(_addon(audit, gate_dirs["data"], screener=_blocked_by("never called")), flow)
    assert flow.response.content == b"refused by the egress policy"
    assert list(audit.rows(5)) == []


def test_health_answers_only_a_request_naming_this_gate(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    addon = _addon(audit, gate_dirs["data"])
    addon.control.port = 8787  # what running() learns from the listener
    ok = _run(addon, _flow(path="/_gate/health"))
    assert ok.response.status_code == 200 and json.loads(ok.response.content)["ok"] is True
    foreign = _flow(path="/_gate/health")
    foreign.request.headers["host"] = "evil.example"
    assert _run(_addon(audit, gate_dirs["data"]), foreign).response.status_code == 403


# -- WebSocket frames ----------------------------------------------------------------------


class Injected:
    """mitmproxy's `inject.websocket` command, as its proxy server offers it: what gate
    tells the agent over a connection, kept here."""

    def __init__(self) -> None:
        self.sent: list[tuple[bool, bytes]] = []

    @command.command("inject.websocket")
    def inject(self, flow: Flow, to_client: bool, message: bytes, is_text: bool = True) -> None:
        self.sent.append((to_client, message))


def _ws_addon(audit: AuditStore, data: Path, users: Users | None = None, **parts: Any) -> GateAddon:
    config = replace(Config(), ask=AskConfig(mode="never"), shared=users is not None)
    config = config.with_upstreams({"openai": parse_upstream("openai", UPSTREAM)})
    parts.setdefault("screens", Screens(None, SecretScreen(Scanner(), b"unit-test-key")))
    return GateAddon(config, data, PolicyStore(), audit, users, **parts)


def _frames(
    addon: GateAddon,
    *frames: tuple[bytes, bool] | Callable[[], object],
    user: str | None = None,
    path: str = "/openai/v1/responses",
    **headers: str,
) -> tuple[Any, Injected]:
    """An upgrade to the Responses WebSocket through the request hook, then each frame (its
    bytes, whether text) from the agent through the message hook; a callable in between is
    called there. `user`: who a shared gate signed in; `headers`: the upgrade's own."""
    flow = _flow(path, body=b"", upgrade="websocket", connection="upgrade", **headers)
    flow.request.method = "GET"
    if user is not None:
        flow.metadata["gate_user"] = user
    ws = tflow.twebsocketflow()
    flow.websocket = ws.websocket
    flow.websocket.messages.clear()
    injected = Injected()

    async def hooks() -> None:
        try:
            await addon.request(flow)
            assert flow.response is None, "the upgrade was refused"
            for frame in frames:
                if callable(frame):
                    frame()
                    continue
                content, is_text = frame
                flow.websocket.messages.append(WebSocketMessage(1 if is_text else 2, True, content))
                await addon.websocket_message(flow)
        finally:
            addon.offload.close()

    with taddons.context(addon, injected):
        asyncio.run(hooks())
    return flow, injected


def _ws_rows(audit: AuditStore) -> list[Any]:
    """The frames' rows (the upgrade has its own)."""
    return [r for r in audit.rows(10) if r["method"] == "WS"]


class FullForFrames(AuditStore):
    """An audit that fills up once the upgrade is written: every frame's row fails."""

    def record_request(self, row: RequestRow) -> int:
        if row.method == "WS":
            raise sqlite3.OperationalError("database or disk is full")
        return super().record_request(row)


def _create(text: str) -> bytes:
    return json.dumps(
        {"type": "response.create", "model": "m", "input": [{"role": "user", "content": text}]}
    ).encode()


def test_a_clean_frame_leaves_as_it_is_and_is_recorded(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    frame = _create("hello")
    flow, injected = _frames(_ws_addon(audit, gate_dirs["data"]), (frame, True))
    [message] = flow.websocket.messages
    assert not message.dropped and message.content == frame
    assert injected.sent == []
    [row] = _ws_rows(audit)
    assert row["verdict"] == "forwarded"


def test_a_frame_with_a_secret_leaves_redacted(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    token = github_token()
    flow, _ = _frames(_ws_addon(audit, gate_dirs["data"]), (_create(f"GITHUB_TOKEN={token}"), True))
    [message] = flow.websocket.messages
    assert not message.dropped
    assert token.encode() not in message.content and b"github" in message.content.lower()
    [row] = _ws_rows(audit)
    assert row["verdict"] == "modified"
    sent = audit.body_of(row["id"])
    assert sent == message.content  # what left, byte for byte


@pytest.mark.parametrize(
    ("content", "is_text", "words"),
    [
        (b"\x00\x01binary", False, "binary WebSocket message"),
        (b"not json {", True, "not JSON"),
        (b"[1, 2]", True, "must be an object"),
        (b'{"type": "response.create", "a": 1, "a": 2}', True, "more than once"),
    ],
    ids=["binary", "not-json", "not-an-object", "repeated-key"],
)
def test_a_frame_gate_cannot_screen_is_dropped_and_the_agent_told(
    audit: AuditStore, gate_dirs: dict[str, Path], content: bytes, is_text: bool, words: str
) -> None:
    flow, injected = _frames(_ws_addon(audit, gate_dirs["data"]), (content, is_text))
    [message] = flow.websocket.messages
    assert message.dropped
    [(to_client, event)] = injected.sent
    assert to_client and words in json.loads(event)["error"]["message"]
    [row] = _ws_rows(audit)
    assert row["verdict"] == "blocked" and words in (row["reason"] or "")


def test_a_frame_whose_row_cannot_be_written_never_leaves(
    gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    audit = FullForFrames(tmp_path / "full.db")
    try:
        flow, injected = _frames(_ws_addon(audit, gate_dirs["data"]), (_create("hello"), True))
    finally:
        audit.close()
    [message] = flow.websocket.messages
    assert message.dropped
    [(_, event)] = injected.sent
    assert "gate blocked this request" in json.loads(event)["error"]["message"]


def test_a_frame_s_block_reason_never_carries_its_secret(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """A frame refused for a key it repeats, the key being a secret: the agent's event and
    the audit's reason say why, never the value."""
    token = github_token()
    content = b'{"type": "response.create", "%s": 1, "%s": 2}' % (token.encode(), token.encode())
    flow, injected = _frames(_ws_addon(audit, gate_dirs["data"]), (content, True))
    assert flow.websocket.messages[0].dropped
    [(_, event)] = injected.sent
    assert token.encode() not in event and b"gate blocked this request" in event
    [row] = _ws_rows(audit)
    assert row["verdict"] == "blocked" and token not in (row["reason"] or "")


def test_a_frame_from_a_user_revoked_since_the_upgrade_is_dropped(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """A shared gate checks its user on every frame: a connection opened before the user was
    revoked carries nothing more out."""
    users = Users(gate_dirs["data"])
    users.add("alice")
    addon = _ws_addon(audit, gate_dirs["data"], users)
    flow, injected = _frames(
        addon,
        (_create("before"), True),
        lambda: users.revoke("alice"),
        (_create("after"), True),
        user="alice",
    )
    first, second = flow.websocket.messages
    assert not first.dropped and second.dropped
    [(_, event)] = injected.sent
    assert "no longer let in" in json.loads(event)["error"]["message"]
    assert [r["verdict"] for r in _ws_rows(audit)] == ["blocked", "forwarded"]  # newest first


def _same_as_http_cases() -> list[Any]:
    """Frames, each also sent as an HTTP body to the same Responses path (built at run time:
    the secrets are fake, made fresh)."""
    token = github_token()
    create = {"type": "response.create", "model": "m"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}
    cases = {
        "clean": _create("hello"),
        "secret": _create(f"GITHUB_TOKEN={token}"),
        "secret-spaced-json": json.dumps(
            create | {"input": [{"role": "user", "content": f"GITHUB_TOKEN={token}"}]}, indent=1
        ).encode(),
        "secret-in-a-key": json.dumps(create | {token: 1}).encode(),
        "secret-in-a-wrapper": json.dumps(
            create | {"response": {"input": [{"role": "user", "content": f"T={token}"}]}}
        ).encode(),
        "repeated-key": b'{"type": "response.create", "input": [], "input": []}',
        "repeated-key-in-an-item": b'{"type":"response.create","input":[{"a":1,"a":2}]}',
        "not-json": b"not json {",
        "empty": b"",
        "only-whitespace": b"  \n ",
        "not-an-object": b"[1, 2]",
        "nan": b'{"type": "response.create", "temperature": NaN}',
        "trailing-bytes": b'{"type": "response.create"} {"input": "more"}',
        "lone-surrogate": b'{"type": "response.create", "input": "\\ud800"}',
        "item-not-an-object": b'{"type": "response.create", "input": [1]}',
        "output-of-no-call": json.dumps(create | {"input": [output]}).encode(),
        "output-of-no-call-in-a-wrapper": json.dumps(
            create | {"response": {"input": [output]}}
        ).encode(),
        "two-outputs-one-call": json.dumps(
            create | {"previous_response_id": "r", "input": [output, output]}
        ).encode(),
    }
    return [pytest.param(body, id=name) for name, body in cases.items()]


def _fate(row: Any, audit: AuditStore) -> tuple[Any, ...]:
    return (
        row["verdict"],
        row["reason"],
        row["model"],
        row["request_bytes"],
        audit.body_of(row["id"]) if row["body"] is not None else None,
    )


@pytest.mark.parametrize("body", _same_as_http_cases())
def test_a_frame_is_screened_as_the_same_body_over_http(
    audit: AuditStore, gate_dirs: dict[str, Path], body: bytes
) -> None:
    """One pipeline: a frame leaves (byte for byte), or is refused (for the same reason),
    exactly as the same bytes would as an HTTP body, and its audit row says the same."""
    post = _run(_ws_addon(audit, gate_dirs["data"]), _flow("/openai/v1/responses", body=body))
    [http_row] = [r for r in audit.rows(10) if r["method"] == "POST"]
    flow, injected = _frames(_ws_addon(audit, gate_dirs["data"]), (body, True))
    [message] = flow.websocket.messages
    [ws_row] = _ws_rows(audit)
    assert _fate(ws_row, audit) == _fate(http_row, audit)
    if post.response is not None:
        [(_, event)] = injected.sent
        said = json.loads(post.response.content)["error"]["message"]
        assert message.dropped and json.loads(event)["error"]["message"] == said
    else:
        assert not message.dropped and injected.sent == []
        assert message.content == post.request.content


def test_a_frame_is_decided_by_the_gate_s_own_screener(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """The screener passed in decides frames as it decides requests: one that crashes drops
    the frame (fail closed), and the agent is told."""

    def screener(req: Outbound, *rest: Any) -> Verdict:
        if req.body:  # the upgrade has none
            raise RuntimeError("boom")
        return screen(req, *rest)

    flow, injected = _frames(
        _ws_addon(audit, gate_dirs["data"], screener=screener), (_create("hello"), True)
    )
    assert flow.websocket.messages[0].dropped
    [(_, event)] = injected.sent
    assert "could not screen this message (RuntimeError)" in json.loads(event)["error"]["message"]
    [row] = _ws_rows(audit)
    assert row["verdict"] == "blocked"


@pytest.mark.parametrize(("size", "on_loop"), [(100, True), (300 * 1024, False)])
def test_a_small_frame_is_screened_on_the_loop_a_large_one_on_a_thread(
    audit: AuditStore, gate_dirs: dict[str, Path], size: int, on_loop: bool
) -> None:
    """Frames are handed to a thread as HTTP bodies are: only when large."""
    where: list[str] = []

    def screener(req: Outbound, *rest: Any) -> Verdict:
        if req.body:
            where.append(threading.current_thread().name)
        return screen(req, *rest)

    addon = _ws_addon(audit, gate_dirs["data"], screener=screener)
    flow, _ = _frames(addon, (_create("x" * size), True))
    assert not flow.websocket.messages[0].dropped
    assert [name.startswith("gate-screen") for name in where] == [not on_loop]


def test_a_frame_s_row_names_the_agent_as_the_upgrade_s_does(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """Without a run, the agent is told by the upgrade's user-agent, for its frames too."""
    _frames(
        _ws_addon(audit, gate_dirs["data"]),
        (_create("hello"), True),
        **{"user-agent": "codex_cli_rs/0.50.0"},
    )
    [upgrade] = [r for r in audit.rows(10) if r["method"] == "GET"]
    [frame] = _ws_rows(audit)
    assert upgrade["agent"] == frame["agent"] == "codex"


def test_a_frame_after_its_run_ended_is_refused_as_a_request_is(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """A run's connection outliving its `gate run`: the next frame is refused, as the next
    HTTP request of that run is."""
    data = gate_dirs["data"]
    run = runs.register(data, str(gate_dirs["project"]), "codex")
    flow, injected = _frames(
        _ws_addon(audit, data),
        (_create("before"), True),
        lambda: runs.unregister(data, run),
        (_create("after"), True),
        path=f"/_run/{run.id}/openai/v1/responses",
    )
    first, second = flow.websocket.messages
    assert not first.dropped and second.dropped
    [(_, event)] = injected.sent
    assert f"does not know run {run.id!r}" in json.loads(event)["error"]["message"]


def test_a_request_whose_agent_leaves_while_gate_asks_is_withdrawn(
    audit: AuditStore, gate_dirs: dict[str, Path]
) -> None:
    """Parked on a question, the agent disconnects: the question is withdrawn, nothing is
    sent, and the audit's row says so, with who asked."""
    config = replace(Config(), ask=AskConfig(mode="ask", timeout_seconds=60)).with_upstreams(
        {"anthropic": parse_upstream("anthropic", UPSTREAM)}
    )
    screens = Screens(None, SecretScreen(Scanner(), b"unit-test-key"))
    addon = GateAddon(config, gate_dirs["data"], PolicyStore(), audit, screens=screens)
    token = github_token()
    flow = _flow(body=MSG | {"messages": [{"role": "user", "content": f"GITHUB_TOKEN={token}"}]})

    async def hooks() -> None:
        try:
            task = asyncio.ensure_future(addon.request(flow))
            for _ in range(200):  # until the question is up
                if addon.pending.questions():
                    break
                await asyncio.sleep(0.02)
            assert addon.pending.questions(), "gate did not ask"
            flow.client_conn.state = ConnectionState.CLOSED  # the agent went away
            await asyncio.wait_for(task, 10)
        finally:
            addon.offload.close()

    with taddons.context(addon):
        asyncio.run(hooks())
    assert flow.response is None and flow.error is not None  # killed: nothing sent
    assert not addon.pending.questions()  # the question went with it
    [row] = list(audit.rows(5))
    assert row["verdict"] == "withdrawn" and row["body"] is None


@pytest.mark.parametrize(
    ("where", "words"),
    [
        ("query", "the query string holds"),
        ("split-query", "the query string holds"),
        ("header", "'x-debug' header holds"),
        ("repeated-credential", "repeats the x-api-key header"),
    ],
)
def test_a_secret_outside_the_body_never_leaves(
    audit: AuditStore, gate_dirs: dict[str, Path], where: str, words: str
) -> None:
    """What gate cannot withhold in place (the path, the query, a header) refuses the whole
    request, naming where, never the value."""
    token = github_token()
    path, headers = "/anthropic/v1/messages", {}
    if where == "query":
        path += f"?trace={token}"
    elif where == "split-query":  # a value cut in two across parameters
        path += f"?a={token[:20]}&b={token[20:]}"
    elif where == "header":
        headers = {"x-debug": token}
    flow = _flow(path, **headers)
    if where == "repeated-credential":  # which copy the provider reads is its choice
        flow.request.headers.add("x-api-key", "one")
        flow.request.headers.add("x-api-key", "two")
    message = _refused(_run(_addon(audit, gate_dirs["data"]), flow), 400, words)
    [row] = list(audit.rows(5))
    assert row["verdict"] == "blocked" and row["body"] is None
    assert token not in message and token not in json.dumps(dict(row))
