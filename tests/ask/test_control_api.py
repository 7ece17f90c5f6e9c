"""The control API's guards: token, Host (DNS rebinding), Origin (CSRF), and bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from ask.control_kit import call, token
from fake_provider import FakeProvider
from gate.proxy.server import Listening

API = "/_gate/api/pending"


def test_the_token_file_is_private_and_required(
    gate: Listening, gate_dirs: dict[str, Path]
) -> None:
    path = gate_dirs["data"] / "control.token"
    assert path.stat().st_mode & 0o777 == 0o600
    assert call(gate, "GET", API, auth=token(gate_dirs["data"])) == (200, {"pending": []})
    status, body = call(gate, "GET", API)
    assert status == 401 and "control token" in body["error"]
    assert call(gate, "GET", API, auth="x" * 43)[0] == 401


@pytest.mark.parametrize("host", ["evil.example:80", "evil.example", "127.0.0.1:1"])
def test_a_foreign_host_is_refused_even_with_the_token(
    gate: Listening, gate_dirs: dict[str, Path], host: str
) -> None:
    status, body = call(gate, "GET", API, auth=token(gate_dirs["data"]), headers={"host": host})
    assert status == 403 and "Host" in body["error"]


def test_localhost_names_of_the_gate_are_accepted(
    gate: Listening, gate_dirs: dict[str, Path]
) -> None:
    status, _ = call(
        gate, "GET", API, auth=token(gate_dirs["data"]), headers={"host": f"localhost:{gate.port}"}
    )
    assert status == 200


@pytest.mark.parametrize(
    "headers", [{"origin": "http://evil.example"}, {"sec-fetch-site": "cross-site"}]
)
def test_a_cross_origin_post_is_refused(
    gate: Listening, gate_dirs: dict[str, Path], headers: dict[str, str]
) -> None:
    status, body = call(
        gate,
        "POST",
        f"{API}/q123456",
        body={"answer": "approve"},
        auth=token(gate_dirs["data"]),
        headers=headers,
    )
    assert status == 403 and "cross-" in body["error"]


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"answer": "approve"}, 404, "no pending question"),
        ({"answer": "yes"}, 400, "answer must be one of"),
        ({"answer": "approve", "remember": "forever"}, 400, "remember must be one of"),
        (b"not json", 400, "JSON object"),
        ([1, 2], 400, "JSON object"),
    ],
)
def test_bad_answers_are_refused_clearly(
    gate: Listening, gate_dirs: dict[str, Path], body: object, status: int, says: str
) -> None:
    got, reply = call(gate, "POST", f"{API}/qnope00", body=body, auth=token(gate_dirs["data"]))
    assert got == status and says in reply["error"]


def test_control_paths_are_never_forwarded(
    gate: Listening, gate_dirs: dict[str, Path], provider: FakeProvider
) -> None:
    status, body = call(gate, "GET", "/_gate/api/other", auth=token(gate_dirs["data"]))
    assert status == 404 and "no control endpoint" in body["error"]
    assert provider.seen == []


def test_a_client_off_loopback_is_refused() -> None:
    """Unit level: a gate bound to 0.0.0.0 (docker) still answers control calls only from
    loopback, whatever Host and token the client sends."""
    from mitmproxy.test import tflow

    from gate.ask.questions import Pending
    from gate.proxy.control import Control

    control = Control(Pending(), "t" * 43)
    control.port = 8787
    flow = tflow.tflow()
    flow.client_conn.peername = ("192.0.2.7", 40000)
    flow.request.path = API
    flow.request.headers["host"] = "127.0.0.1:8787"
    flow.request.headers["authorization"] = "Bearer " + "t" * 43
    control.handle(flow)
    assert flow.response is not None and flow.response.status_code == 403
    assert b"loopback clients only" in flow.response.content


def test_a_gate_that_went_away_is_skipped_and_alone_is_a_clear_error(
    gate: Listening, gate_dirs: dict[str, Path]
) -> None:
    import json
    import os
    import socket

    from gate.ask.client import ControlClient
    from gate.errors import GateError

    with socket.socket() as s:  # a port nothing listens on once closed
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stale = gate_dirs["data"] / "control" / f"{os.getpid()}-{port}.json"  # a live pid
    stale.write_text(json.dumps({"pid": os.getpid(), "host": "127.0.0.1", "port": port}))
    client = ControlClient.find(gate_dirs["data"])
    assert len(client.bases) == 2 and client.pending() == []
    assert client.page_url.startswith(gate.base_url)
    with pytest.raises(GateError, match="did not answer"):
        ControlClient([f"http://127.0.0.1:{port}"], client.token).pending()
