"""The console's page for one request and its paging (requests, sessions), in a real
headless chromium, behind the same cookie as the rest of the console."""

from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic

from ask.ask_kit import AskingGate, env_turn, github_token
from ask.control_kit import call, token
from fake_provider import FakeProvider
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening

ROOT = "/_gate/console"


def ask_once(client: anthropic.Anthropic, n: int, extra: str = "") -> None:
    """One conversation of its own (its own session id), one turn."""
    client.messages.create(
        model="claude-test",
        max_tokens=8,
        messages=[{"role": "user", "content": f"task number {n}{extra}"}],
        extra_headers={"x-claude-code-session-id": f"session-{n}"},
    )


def test_each_request_has_its_page_with_what_was_withheld_and_the_body_masked(
    gate: Listening,
    client: anthropic.Anthropic,
    browser: Any,
    gate_dirs: dict[str, Path],
    tmp_path: Path,
) -> None:
    secret = github_token()
    client.messages.create(**env_turn(gate_dirs["project"], secret))  # redacted (ask: never)
    ask_once(client, 2)
    page = browser.new_page()
    try:
        page.goto(f"{gate.base_url}{ROOT}?token={token(gate_dirs['data'])}")
        page.locator("#requests").get_by_role("link", name="1", exact=True).click()
        page.wait_for_url(f"**{ROOT}/request?id=1")
        text = page.inner_text("body")
        assert "Request 1" in text and "modified" in text and "claude-test" in text
        withheld = page.locator("table", has_text="Rule").inner_text()
        assert "withheld" in withheld and "github" in withheld and "Bash" in withheld
        body = page.locator("#body")
        assert "[gate:" in body.inner_text() and body.locator("mark").count() >= 1
        assert secret not in page.content()
        page.screenshot(path=str(tmp_path / "request.png"), full_page=True)
        # Next and previous, and back to the list.
        page.get_by_role("link", name="request 2 →").click()
        page.wait_for_url(f"**{ROOT}/request?id=2")
        assert "task number 2" in page.inner_text("#body")
        assert "Nothing was withheld" in page.inner_text("body")
        page.get_by_role("link", name="← request 1").click()
        page.wait_for_url(f"**{ROOT}/request?id=1")
        # From a session's turn to its request.
        page.goto(f"{gate.base_url}{ROOT}/sessions")
        page.locator("tr", has_text="help me with this project").get_by_role("link").click()
        page.get_by_role("link", name="request 1").click()
        page.wait_for_url(f"**{ROOT}/request?id=1")
    finally:
        page.close()
    cookie = {"cookie": f"gate_control={token(gate_dirs['data'])}"}
    for bad in ("999", "x", "-1", ""):
        assert call(gate, "GET", f"{ROOT}/request?id={bad}", headers=cookie)[0] == 404, bad
    status, body = call(gate, "GET", f"{ROOT}/request?id=1")
    assert status == 401 and "claude-test" not in str(body)


def test_an_approved_secret_is_masked_on_its_request_page(
    provider: FakeProvider, browser: Any, gate_dirs: dict[str, Path]
) -> None:
    """A value a person let through was sent as it is: the page shows its kind and
    length only."""
    config = replace(
        Config(), port=0, ask=AskConfig(timeout_seconds=60), projects=(str(gate_dirs["project"]),)
    ).with_upstreams({"anthropic": parse_upstream("anthropic", provider.url)})
    server = BackgroundGate(config, gate_dirs["data"])
    g = AskingGate(server.start(), gate_dirs["data"], provider)
    try:
        secret = github_token()
        sent = g.send(env_turn(gate_dirs["project"], secret))
        [q] = g.wait_pending()
        g.control().answer(q["id"], "approve", "once")
        assert sent.wait().error is None and secret in provider.seen[-1].body.decode()
        page = browser.new_page()
        try:
            page.goto(f"{g.listening.base_url}{ROOT}?token={token(g.data)}")
            page.goto(f"{g.listening.base_url}{ROOT}/request?id=1")
            assert "approved, sent" in page.inner_text("body")
            assert "approve by person" in page.inner_text("body")
            assert "chars masked]" in page.inner_text("#body")
            assert secret not in page.content()
        finally:
            page.close()
    finally:
        server.stop()


def test_the_list_of_requests_and_the_sessions_come_in_pages(
    gate: Listening, client: anthropic.Anthropic, browser: Any, gate_dirs: dict[str, Path]
) -> None:
    for n in range(1, 56):  # 55 requests, each its own session
        ask_once(client, n)
    page = browser.new_page()
    try:
        page.goto(f"{gate.base_url}{ROOT}?token={token(gate_dirs['data'])}")
        rows = page.locator("#requests tr")
        assert rows.count() == 30 and rows.first.get_attribute("id") == "r55"
        assert "requests 26 to 55 of 55" in page.inner_text("#pager")
        assert page.get_by_role("link", name="← newer").count() == 0
        page.get_by_role("link", name="older →").click()
        page.wait_for_url(f"**{ROOT}?before=26")
        assert rows.count() == 25 and rows.first.get_attribute("id") == "r25"
        assert "requests 1 to 25 of 55" in page.inner_text("#pager")
        assert page.get_by_role("link", name="older →").count() == 0
        # An older page is not live: a new request does not push it along.
        assert page.locator("script").count() == 0
        page.get_by_role("link", name="← newer").click()
        page.wait_for_url(f"**{ROOT}?after=25")
        assert rows.count() == 30 and rows.last.get_attribute("id") == "r26"
        page.get_by_role("link", name="newest (live)").click()
        page.wait_for_url(f"**{ROOT}")
        # The newest page is: a new request appears, and the pager follows.
        page.evaluate("window.loadedOnce = 'yes'")
        threading.Thread(target=ask_once, args=(client, 56)).start()
        page.locator("#requests tr#r56").wait_for(timeout=15000)
        page.locator("#pager", has_text="requests 27 to 56 of 56").wait_for(timeout=15000)
        assert page.evaluate("window.loadedOnce") == "yes"
        # Sessions, 50 a page, most recent first.
        page.goto(f"{gate.base_url}{ROOT}/sessions")
        assert page.locator("table tr").count() == 51  # a header and 50
        assert "task number 56" in page.locator("table tr").nth(1).inner_text()
        page.get_by_role("link", name="older →").first.click()
        page.wait_for_url(f"**{ROOT}/sessions?page=2")
        assert page.locator("table tr").count() == 7
        assert "task number 1" in page.locator("table tr").last.inner_text()
        assert page.get_by_role("link", name="older →").count() == 0
        page.get_by_role("link", name="← newer").first.click()
        page.wait_for_url(f"**{ROOT}/sessions?page=1")
    finally:
        page.close()
    cookie = {"cookie": f"gate_control={token(gate_dirs['data'])}"}
    for bad in ("before=x", "after=-3", "page=0", "before=1e9"):
        status, body = call(gate, "GET", f"{ROOT}?{bad}", headers=cookie)
        assert status == 400 and "positive whole number" in str(body), bad
    assert call(gate, "GET", f"{ROOT}?before=26")[0] == 401  # no cookie
