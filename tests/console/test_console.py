"""The web console on the gate's own port, in a real headless chromium: live requests,
sessions turn by turn with each turn's new content, search and the report; and nothing
served without the token's cookie, no cross-site POST."""

from __future__ import annotations

import http.client
from pathlib import Path
from typing import Any

import anthropic
import pytest

from ask.ask_kit import env_turn, github_token
from ask.control_kit import call, token
from gate.proxy.server import Listening

ROOT = "/_gate/console"


def send(client: anthropic.Anthropic, body: dict[str, Any]) -> None:
    client.messages.create(**body)


def next_turn(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        **body,
        "messages": [
            *body["messages"],
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": text},
        ],
    }


def test_the_console_shows_live_requests_sessions_search_and_report(
    gate: Listening,
    client: anthropic.Anthropic,
    browser: Any,
    gate_dirs: dict[str, Path],
    tmp_path: Path,
) -> None:
    secret = github_token()
    first = env_turn(gate_dirs["project"], secret)
    send(client, first)  # the token is redacted (nobody asked: ask never)
    page = browser.new_page()
    try:
        page.goto(f"{gate.base_url}{ROOT}?token={token(gate_dirs['data'])}")
        assert page.url.endswith(ROOT)  # the token left the address bar for the cookie
        rows = page.locator("#requests tr")
        assert rows.count() == 1 and "modified" in rows.first.inner_text()
        page.evaluate("window.loadedOnce = 'yes'")
        # Live: the next turn appears in the table without a reload.
        send(client, next_turn(first, "now fix the tests please"))
        rows.nth(1).wait_for(timeout=15000)  # (the CSP allows no eval: no wait_for_function)
        assert page.evaluate("window.loadedOnce") == "yes"
        page.screenshot(path=str(tmp_path / "live.png"), full_page=True)
        # Sessions: one conversation, two turns; its page shows each turn as received.
        page.get_by_role("link", name="Sessions").click()
        assert "help me with this project" in page.inner_text("body")
        page.locator("table a").first.click()
        turns = page.locator(".turn")
        assert turns.count() == 2
        one, two = turns.nth(0).inner_text(), turns.nth(1).inner_text()
        assert "Turn 1" in one and "[gate:" in one and secret not in page.content()
        assert page.locator(".turn").nth(0).locator("mark").count() >= 1  # placeholder marked
        # Turn 2's diff: only what it added is shown as new, the rest is counted.
        assert "unchanged from the turn before" in two and "now fix the tests please" in two
        assert "help me with this project" not in two
        page.screenshot(path=str(tmp_path / "session.png"), full_page=True)
        # Search what was sent.
        page.get_by_role("link", name="Search").click()
        page.fill("input[name=q]", "fix the tests")
        page.keyboard.press("Enter")
        page.wait_for_url("**/search?q=*")
        assert "fix the tests" in page.locator("table").inner_text()
        page.screenshot(path=str(tmp_path / "search.png"), full_page=True)
        # The report, as `gate report --html` writes it.
        page.get_by_role("link", name="Report").click()
        page.wait_for_url(f"**{ROOT}/report")
        assert "github" in page.inner_text("body").lower()
        assert page.get_by_role("link", name="Sessions").count() == 1  # the way back
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
    finally:
        page.close()


@pytest.mark.parametrize("page", [ROOT, "/_gate/ui"])
def test_the_sign_in_cookie_is_http_only_same_site_and_gate_s_own(
    gate: Listening, gate_dirs: dict[str, Path], page: str
) -> None:
    """The console's and the approval page's sign-ins set one cookie the same way; a gate
    on loopback speaks plain HTTP, so it is not Secure there (a shared gate's is)."""
    secret = token(gate_dirs["data"])
    conn = http.client.HTTPConnection(gate.host, gate.port, timeout=10)
    conn.request("GET", f"{page}?token={secret}", headers={"host": f"127.0.0.1:{gate.port}"})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    cookie = resp.getheader("set-cookie", "")
    assert resp.status == 303 and cookie.startswith(f"gate_control={secret};"), cookie
    assert {a.strip() for a in cookie.split(";")[1:]} == {
        "HttpOnly",
        "SameSite=Strict",
        "Path=/_gate/",
    }


def test_nothing_is_served_without_the_cookie_and_no_cross_site_post(
    gate: Listening, client: anthropic.Anthropic, gate_dirs: dict[str, Path]
) -> None:
    send(client, env_turn(gate_dirs["project"], github_token()))
    secret = token(gate_dirs["data"])
    for path in (
        ROOT,
        f"{ROOT}/live",
        f"{ROOT}/sessions",
        f"{ROOT}/session?id=x",
        f"{ROOT}/request?id=1",
        f"{ROOT}/search?q=help",
        f"{ROOT}/report",
        f"{ROOT}/console.js",
    ):
        status, body = call(gate, "GET", path)
        assert status == 401 and "claude-test" not in str(body), path
        assert call(gate, "GET", path, auth=secret)[0] == 401, path  # a Bearer is not it
        bad = call(gate, "GET", path, headers={"cookie": "gate_control=" + "x" * 43})
        assert bad[0] == 401, path
    assert call(gate, "GET", f"{ROOT}?token=wrong")[0] == 401
    cookie = {"cookie": f"gate_control={secret}"}
    status, body = call(gate, "GET", f"{ROOT}/live", headers=cookie)
    assert status == 200 and "claude-test" in str(body)
    # Another site's page cannot post with the person's cookie, nor read it by rebinding.
    evil = {**cookie, "origin": "http://evil.example", "sec-fetch-site": "cross-site"}
    status, body = call(gate, "POST", f"{ROOT}/sessions", headers=evil, body=b"x=1")
    assert status == 403 and "cross-origin" in str(body)
    status, body = call(
        gate,
        "POST",
        f"{ROOT}/sessions",
        headers={**cookie, "sec-fetch-site": "cross-site"},
        body=b"x=1",
    )
    assert status == 403 and "cross-site" in str(body)
    status, body = call(gate, "GET", ROOT, headers={**cookie, "host": "evil.example"})
    assert status == 403 and "DNS rebinding" in str(body)
    status, _ = call(gate, "POST", ROOT, headers=cookie, body=b"")  # same site: reads only
    assert status == 405


def test_what_an_agent_sent_is_shown_as_text_never_as_markup(
    gate: Listening, browser: Any, gate_dirs: dict[str, Path]
) -> None:
    """A prompt-injected agent writes markup into its prompt and its session id: the
    console shows both as text, and no element or script of theirs reaches the page."""
    evil = '<img id="pwn" src="x" onerror="document.title=1"><script id="pwn2">x</script>'
    sid = '"><b id="pwn3">s</b>'
    with anthropic.Anthropic(
        base_url=f"{gate.base_url}/anthropic",
        api_key="sk-ant-test-x",
        max_retries=0,
        default_headers={"x-claude-code-session-id": sid},
    ) as c:
        send(
            c,
            {
                **env_turn(gate_dirs["project"], github_token()),
                "messages": [{"role": "user", "content": f"look {evil} here"}],
            },
        )
    page = browser.new_page()
    try:
        page.goto(f"{gate.base_url}{ROOT}?token={token(gate_dirs['data'])}")
        for path in ("", "/sessions", "/search?q=look", "/request?id=1"):
            page.goto(f"{gate.base_url}{ROOT}{path}")
            assert page.locator("#pwn, #pwn2, #pwn3").count() == 0, path
        page.goto(f"{gate.base_url}{ROOT}/sessions")
        page.locator("table a").first.click()
        assert evil in page.inner_text("body")  # shown, as text
        assert page.locator("#pwn, #pwn2, #pwn3").count() == 0
        assert page.title().startswith("gate")
    finally:
        page.close()
