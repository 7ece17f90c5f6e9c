"""The approval page in a real headless chromium keeps itself current in place: new
questions appear, answered ones go, the focus stays; it says when a value already left in
this conversation; and its single keys answer."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ask.ask_kit import AskingGate, env_turn, github_token
from ask.control_kit import call, token

UI = "/_gate/ui"


def later_turn(first: dict[str, Any], n: int) -> dict[str, Any]:
    """The same conversation, `n` turns on: it resends everything before."""
    messages = list(first["messages"])
    for i in range(n):
        messages += [
            {"role": "assistant", "content": f"ok {i}"},
            {"role": "user", "content": f"and now {i}?"},
        ]
    return {**first, "messages": messages}


def wait_for(check: Callable[[], bool], timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "the page did not change in time"
        time.sleep(0.1)


def test_new_questions_appear_and_answered_ones_go_without_a_reload(
    asking: Callable[..., AskingGate], browser: Any, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    g = asking(timeout_seconds=60)
    page = browser.new_page()
    try:
        page.goto(g.control().page_url)
        assert page.locator("#empty").is_visible()
        page.evaluate("window.loadedOnce = 'yes'")  # gone if the page reloads
        first = g.send(env_turn(gate_dirs["project"], github_token()))
        [q1] = g.wait_pending()
        card1 = page.locator(f"#{q1['id']}")
        card1.wait_for(timeout=15000)
        assert not page.locator("#empty").is_visible()
        assert "Not sent earlier in this conversation." in card1.inner_text()
        card1.get_by_role("button", name="Approve for this project").focus()
        # Another conversation asks: its card is added below, the focus does not move.
        other = env_turn(gate_dirs["project"], github_token(), call_id="toolu_9")
        other["messages"][0] = {"role": "user", "content": "a different conversation"}
        second = g.send(other)
        [_, q2] = g.wait_pending(2)
        page.locator(f"#{q2['id']}").wait_for(timeout=15000)
        focused = "document.activeElement.closest('.q').id + ' ' + document.activeElement.value"
        assert page.evaluate(focused) == f"{q1['id']} approve:project"
        page.screenshot(path=str(tmp_path / "two-questions.png"), full_page=True)
        # Answered elsewhere (the CLI): its card goes, the other stays focused.
        g.control().answer(q2["id"], "redact")
        page.locator(f"#{q2['id']}").wait_for(state="detached", timeout=15000)
        assert page.evaluate(focused) == f"{q1['id']} approve:project"
        assert page.evaluate("window.loadedOnce") == "yes"  # never reloaded
        assert second.wait().error is None
        g.control().answer(q1["id"], "block")
        card1.wait_for(state="detached", timeout=15000)
        wait_for(lambda: page.locator("#empty").is_visible())
        assert page.evaluate("window.loadedOnce") == "yes"
    finally:
        page.close()
    assert "blocked" in str(first.wait().error)


def test_the_page_says_a_value_already_left_earlier_in_this_conversation(
    asking: Callable[..., AskingGate], browser: Any, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    g = asking(timeout_seconds=60)
    secret = github_token()
    first = env_turn(gate_dirs["project"], secret)
    sent = g.send(first)
    [q1] = g.wait_pending()
    g.control().answer(q1["id"], "approve", "once")  # this request only: asked again later
    assert sent.wait().error is None
    again = g.send(later_turn(first, 1))
    [q2] = g.wait_pending()
    page = browser.new_page()
    try:
        page.goto(g.control().page_url)
        card = page.locator(f"#{q2['id']}")
        text = card.inner_text()
        assert "Already sent earlier in this conversation: request 1," in text, text
        assert secret not in page.content()
        page.screenshot(path=str(tmp_path / "sent-before.png"), full_page=True)
        # The single keys of gate watch: b blocks the first (or focused) question.
        page.keyboard.press("b")
        card.wait_for(state="detached", timeout=15000)
        assert page.inner_text("#note") == f"{q2['id']}: block, for this conversation"
        assert page.url.endswith(UI)
    finally:
        page.close()
    assert "blocked" in str(again.wait().error)


def test_the_live_endpoints_need_the_cookie(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking(timeout_seconds=30, default="block")
    sent = g.send(env_turn(gate_dirs["project"], github_token()))
    g.wait_pending()
    for path in (f"{UI}/questions", f"{UI}/page.js"):
        status, body = call(g.listening, "GET", path)
        assert status == 401 and "not signed in" in str(body), path
        status, body = call(g.listening, "GET", path, auth=token(g.data))  # a Bearer is not it
        assert status == 401, path
        status, body = call(
            g.listening, "GET", path, headers={"cookie": f"gate_control={token(g.data)}"}
        )
        assert status == 200, path
    assert "questions" in body or "fetch(" in str(body)
    for q in g.control().pending():
        g.control().answer(q["id"], "block")
    sent.wait()


def test_a_page_reading_the_audit_is_never_forwarded_unfinished() -> None:
    """Unit level: the page is made in a worker (control.LATER); until then the flow holds
    a 503 of gate's own, so a flow whose work never ran is not sent anywhere."""
    from mitmproxy.test import tflow

    from gate.ask.questions import Pending
    from gate.proxy.control import LATER, Control

    control = Control(Pending(), "t" * 43)
    control.port = 8787
    for path in (UI, f"{UI}/questions", "/_gate/console", "/_gate/console/sessions"):
        flow = tflow.tflow()
        flow.client_conn.peername = ("127.0.0.1", 40000)
        flow.request.path = path
        flow.request.headers["host"] = "127.0.0.1:8787"
        flow.request.headers["cookie"] = "gate_control=" + "t" * 43
        flow.response = None
        control.handle(flow)
        assert flow.response is not None, path
        if path.startswith("/_gate/console"):  # no audit in this unit: said so at once
            assert flow.response.status_code == 503 and LATER not in flow.metadata
            continue
        assert flow.response.status_code == 503 and LATER in flow.metadata, path
        flow.metadata.pop(LATER)()
        assert flow.response.status_code == 200, path


def test_the_console_lists_the_waiting_questions_live(
    asking: Callable[..., AskingGate], browser: Any, gate_dirs: dict[str, Path]
) -> None:
    g = asking(timeout_seconds=60)
    page = browser.new_page()
    try:
        page.goto(f"{g.listening.base_url}/_gate/console?token={token(g.data)}")
        assert "No question is waiting." in page.locator("#pending").inner_text()
        sent = g.send(env_turn(gate_dirs["project"], github_token()))
        [q] = g.wait_pending()
        wait_for(lambda: q["id"] in page.locator("#pending").inner_text())
        text = page.locator("#pending").inner_text()
        assert "1 question waiting" in text and "wants to send a github token" in text
        g.control().answer(q["id"], "block")
        wait_for(lambda: "No question is waiting." in page.locator("#pending").inner_text())
        page.locator("#requests tr", has_text="blocked").wait_for(timeout=15000)
    finally:
        page.close()
    sent.wait()
