"""The approval page, clicked in a real headless chromium; and its guards."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ask.ask_kit import AskingGate, env_turn, github_token
from ask.control_kit import call, token

UI = "/_gate/ui"


def test_a_person_approves_on_the_page(
    asking: Callable[..., AskingGate], browser: Any, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    g = asking()
    secret = github_token()
    sent = g.send(env_turn(gate_dirs["project"], secret))
    [q] = g.wait_pending()
    page = browser.new_page()
    try:
        page.goto(g.control().page_url)
        assert page.url.endswith(UI)  # the token left the address bar for a cookie
        card = page.locator(f"#{q['id']}")
        text = card.inner_text()
        assert "send-secret" in text and q["findings"][0]["preview"] in text
        assert "GITHUB_TOKEN=" in text and secret not in page.content()
        # Asked in plain words, each button saying what it means, coloured by what it does.
        assert "An agent wants to send a github token, from Bash, to Anthropic." in text
        approve = card.get_by_role("button", name="Approve", exact=False).first
        assert "this conversation's later turns" in approve.inner_text()
        assert approve.get_attribute("accesskey") == "a"
        colours = {
            cls: card.locator(f"button.{cls}").first.evaluate(
                "b => getComputedStyle(b).backgroundColor"
            )
            for cls in ("approve", "redact", "block")
        }
        assert len(set(colours.values())) == 3, colours
        assert card.locator("button.block").get_attribute("accesskey") == "b"
        page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
        card.get_by_role("button", name="Approve this request only").click()
        page.wait_for_url(f"**{UI}?note=*")
        assert f"{q['id']}: approve" in page.inner_text("body")
        cookies = page.context.cookies()
        [c] = [c for c in cookies if c["name"] == "gate_control"]
        assert c["httpOnly"] and c["sameSite"] == "Strict"
    finally:
        page.close()
    sent.wait()
    assert secret in g.provider.seen[-1].body.decode()


def test_block_on_the_page(
    asking: Callable[..., AskingGate], browser: Any, gate_dirs: dict[str, Path]
) -> None:
    g = asking()
    sent = g.send(env_turn(gate_dirs["project"], github_token()))
    [q] = g.wait_pending()
    page = browser.new_page()
    try:
        page.goto(g.control().page_url)
        page.locator(f"#{q['id']}").get_by_role("button", name="Block").click()
        page.wait_for_url(f"**{UI}?note=*")
        assert "No pending questions." in page.inner_text("body")
    finally:
        page.close()
    assert "the user blocked it" in str(sent.wait().error)


def test_the_page_needs_the_cookie_and_the_forms_need_the_csrf_token(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking()
    sent = g.send(env_turn(gate_dirs["project"], github_token()))
    [q] = g.wait_pending()
    secret = token(g.data)
    status, html = call(g.listening, "GET", UI)
    assert status == 401 and "Not signed in" in html
    assert call(g.listening, "GET", f"{UI}?token=wrong")[0] == 401
    cookie = {
        "cookie": f"gate_control={secret}",
        "content-type": "application/x-www-form-urlencoded",
    }
    form = f"id={q['id']}&choice=approve:once&csrf=".encode()
    status, html = call(g.listening, "POST", f"{UI}/answer", body=form + b"0" * 64, headers=cookie)
    assert status == 403 and "CSRF" in html
    status, _ = call(
        g.listening,
        "POST",
        f"{UI}/answer",
        body=form,
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert status == 401  # the CSRF token alone is not enough either
    status, body = call(
        g.listening,
        "POST",
        f"{UI}/answer",
        body=form,
        headers={**cookie, "origin": "http://evil.example"},
    )
    assert status == 403 and "cross-origin" in body["error"]
    status, html = call(
        g.listening,
        "GET",
        UI,
        headers={"cookie": f"gate_control={secret}", "host": "rebind.example:80"},
    )
    assert status == 403
    assert [p["id"] for p in g.control().pending()] == [q["id"]]  # none of that answered it
    g.control().answer(q["id"], "redact")
    sent.wait()
