"""The decision helper: a real loopback HTTP server proposes answers; failures are None."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from gate.ask.helper import check_helper_url, propose
from gate.errors import ConfigError
from loopback import LoopbackServer

QUESTION = {
    "id": "q1",
    "kind": "send-secret",
    "findings": [{"kind": "github-token", "preview": "ghp_********abcd"}],
}


class Helper(LoopbackServer):
    """Replies to each POST with `reply` (after `delay` seconds) and keeps what it got."""

    def __init__(
        self,
        reply: bytes,
        status: int = 200,
        delay: float = 0.0,
        headers: dict[str, str] | None = None,
    ):
        self.received: list[Any] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append(json.loads(body))
                time.sleep(delay)
                self.send_response(status)
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self.serve(Handler)


@pytest.fixture
def helpers() -> Iterator[list[Helper]]:
    started: list[Helper] = []
    yield started
    for h in started:
        h.stop()


def start(helpers: list[Helper], *args: Any, **kwargs: Any) -> Helper:
    helpers.append(Helper(*args, **kwargs))
    return helpers[-1]


def test_helper_proposes_an_answer(helpers: list[Helper], monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy from the environment is never used: it would see every question.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    helper = start(helpers, b'{"answer": "redact", "why": "looks live"}')
    assert propose(helper.url + "/propose", QUESTION) == "redact"
    assert helper.received == [QUESTION]


def test_slow_helper_times_out_to_none(helpers: list[Helper]) -> None:
    helper = start(helpers, b'{"answer": "approve"}', delay=3.0)
    began = time.monotonic()
    assert propose(helper.url, QUESTION, timeout=0.3) is None
    assert time.monotonic() - began < 2.0


@pytest.mark.parametrize(
    ("reply", "status"),
    [
        (b'{"answer": "allow"}', 200),
        (b'{"answer": ["approve"]}', 200),
        (b'["approve"]', 200),
        (b"approve", 200),
        (b'{"answer": "approve"}', 500),
    ],
)
def test_bad_replies_are_no_proposal(helpers: list[Helper], reply: bytes, status: int) -> None:
    assert propose(start(helpers, reply, status=status).url, QUESTION) is None


def test_a_redirect_is_not_followed(helpers: list[Helper]) -> None:
    target = start(helpers, b'{"answer": "approve"}')
    hop = start(helpers, b"", status=307, headers={"Location": target.url})
    assert propose(hop.url, QUESTION) is None
    assert target.received == []


def test_unreachable_or_odd_urls_are_no_proposal() -> None:
    assert propose("http://127.0.0.1:9/", QUESTION, timeout=0.5) is None
    assert propose("file:///etc/passwd", QUESTION) is None
    assert propose("not a url", QUESTION) is None


@pytest.mark.parametrize(
    "url",
    ["http://127.0.0.1:8790/p", "http://localhost:1/", "https://[::1]:9/x", "http://127.8.9.10/"],
)
def test_loopback_urls_are_allowed(url: str) -> None:
    assert check_helper_url(f" {url} ", allow_remote=False) == url


@pytest.mark.parametrize(
    "url",
    [
        "http://10.0.0.5:8790/",
        "https://helper.example.com/",
        "http://0.0.0.0:8790/",
        "http://127.0.0.1.example.com/",
    ],
)
def test_remote_urls_are_refused_unless_allowed(url: str) -> None:
    with pytest.raises(ConfigError, match="not this machine") as err:
        check_helper_url(url, allow_remote=False)
    assert err.value.where == "decisions.helper_url"
    assert "allow_remote" in (err.value.hint or "")
    assert check_helper_url(url, allow_remote=True) == url  # checked, never contacted


@pytest.mark.parametrize("url", ["ftp://127.0.0.1/", "127.0.0.1:8790", "http:///x", ""])
def test_non_http_urls_are_refused(url: str) -> None:
    with pytest.raises(ConfigError, match="not an http"):
        check_helper_url(url, allow_remote=True)
