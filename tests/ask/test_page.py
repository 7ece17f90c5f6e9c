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
        page.evaluate("window.loadedOnce = 'yes'")  # gone if the page reloads
        card.get_by_role("button", name="Approve this request only").click()
        # Answered in place: the card goes, the status line says what was answered, the
        # page never left (no redirect, no reload).
        card.wait_for(state="detached", timeout=15000)
        assert page.locator("#note").inner_text() == f"{q['id']}: approve, for this request only"
        assert page.url.endswith(UI) and page.evaluate("window.loadedOnce") == "yes"
        assert page.locator("#empty").is_visible()
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
        page.locator(f"#{q['id']}").wait_for(state="detached", timeout=15000)
        assert f"{q['id']}: block, for this conversation" in page.inner_text("#note")
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


def test_an_answer_that_is_not_taken_is_said_where_it_was_given(
    asking: Callable[..., AskingGate], browser: Any, gate_dirs: dict[str, Path]
) -> None:
    """A refused answer (here a CSRF token that is not the page's) leaves the card, says
    why in it and gives the buttons back; a question answered elsewhere meanwhile is said
    in the status line, and its card goes."""
    g = asking(timeout_seconds=60)
    sent = g.send(env_turn(gate_dirs["project"], github_token()))
    [q] = g.wait_pending()
    page = browser.new_page()
    try:
        page.goto(g.control().page_url)
        card = page.locator(f"#{q['id']}")
        card.locator("input[name=csrf]").evaluate("i => { i.value = '0'.repeat(64); }")
        card.get_by_role("button", name="Block").click()
        card.locator(".error").wait_for(timeout=15000)
        assert "CSRF token is wrong" in card.locator(".error").inner_text()
        assert card.get_by_role("button", name="Block").is_enabled()
        assert [p["id"] for p in g.control().pending()] == [q["id"]]  # not answered
        # Answered from the CLI while the page polls nothing: its next answer gets a 404.
        page.route("**/_gate/ui/questions", lambda route: route.abort())
        page.reload()
        g.control().answer(q["id"], "redact")
        page.locator(f"#{q['id']}").get_by_role("button", name="Block").click()
        page.locator(f"#{q['id']}").wait_for(state="detached", timeout=15000)
        note = page.locator("#note")
        said = note.inner_text()  # 409 while gate still holds the answered question, then 404
        assert "already answered (redact" in said or f"no pending question '{q['id']}'" in said
        assert "bad" in (note.get_attribute("class") or "")
    finally:
        page.close()
    assert sent.wait().error is None  # redacted, sent


def test_the_answer_endpoint_replies_in_json_to_the_script_and_keeps_its_guards(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking(timeout_seconds=60)
    sent = g.send(env_turn(gate_dirs["project"], github_token()))
    [q] = g.wait_pending()
    secret = token(g.data)
    form = "content-type", "application/x-www-form-urlencoded"
    fetched = {form[0]: form[1], "x-gate-answer": "1"}
    cookie = {**fetched, "cookie": f"gate_control={secret}"}
    answer = f"id={q['id']}&choice=block&csrf=".encode()
    status, body = call(g.listening, "POST", f"{UI}/answer", body=answer, headers=fetched)
    assert status == 401 and "not signed in" in body["error"]
    status, body = call(
        g.listening, "POST", f"{UI}/answer", body=answer + b"0" * 64, headers=cookie
    )
    assert status == 403 and "CSRF" in body["error"]
    status, body = call(
        g.listening,
        "POST",
        f"{UI}/answer",
        body=answer + b"0" * 64,
        headers={**cookie, "origin": "http://evil.example", "sec-fetch-site": "cross-site"},
    )
    assert status == 403 and "cross-" in body["error"]
    # A preflight from another site is never granted, so its script cannot send the header.
    status, _ = call(
        g.listening,
        "OPTIONS",
        f"{UI}/answer",
        headers={
            "origin": "http://evil.example",
            "access-control-request-headers": "x-gate-answer",
        },
    )
    assert status == 403
    assert [p["id"] for p in g.control().pending()] == [q["id"]]
    status, html = call(g.listening, "GET", UI, headers={"cookie": f"gate_control={secret}"})
    csrf = html.split('name="csrf" value="', 1)[1].split('"', 1)[0]
    status, body = call(
        g.listening, "POST", f"{UI}/answer", body=answer + csrf.encode(), headers=cookie
    )
    assert status == 200 and body["note"] == f"{q['id']}: block, for this conversation"
    status, body = call(
        g.listening, "POST", f"{UI}/answer", body=answer + csrf.encode(), headers=cookie
    )
    assert status in (404, 409)  # answered: no second answer
    assert "blocked" in str(sent.wait().error)
    # Without the script (a plain form post): the page again, with the note in its URL.
    status, _ = call(
        g.listening,
        "POST",
        f"{UI}/answer",
        body=answer + csrf.encode(),
        headers={form[0]: form[1], "cookie": f"gate_control={secret}"},
    )
    assert status == 303
