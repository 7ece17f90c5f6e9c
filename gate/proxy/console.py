"""The web console's routes under /_gate/console: the approval page's token, cookie and
Host/Origin checks, GET only, every page read from the audit off the event loop."""

from __future__ import annotations

import hmac
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlsplit

from mitmproxy import http

from gate.console import pages, request
from gate.screen.secrets import Scanner

if TYPE_CHECKING:
    from gate.proxy.control import Control

ROOT = pages.ROOT


def handle(control: Control, flow: http.HTTPFlow) -> None:
    """Answer a console request; the caller has already refused foreign hosts and origins."""
    from gate.proxy.control import HEADERS, html_response, json_response

    req = flow.request
    path = req.path.split("?", 1)[0].rstrip("/") or ROOT
    query = parse_qs(urlsplit(req.path).query)
    given = (query.get("token") or [""])[0]
    if given and hmac.compare_digest(given.encode(), control.token.encode()):
        # As the approval page: the token becomes an HttpOnly, SameSite=Strict cookie.
        flow.response = http.Response.make(
            303,
            b"",
            {
                **HEADERS,
                "location": ROOT,
                "set-cookie": control.sign_in_cookie(control.token),
            },
        )
        return
    if not control.signed_in(req):
        flow.response = html_response(
            401,
            pages.page(
                "not signed in",
                (
                    "<p>Not signed in. Open the console with the URL <code>gate serve</code>"
                    " printed (<code>/_gate/console?token=…</code>).</p>"
                ),
            ),
        )
        return
    if req.method != "GET":  # the console only reads; answers go through the page's forms
        flow.response = json_response(405, {"error": "the console only reads (GET)"})
        return
    if path == pages.SCRIPT_PATH:
        flow.response = http.Response.make(
            200,
            pages.SCRIPT.encode(),
            {**HEADERS, "content-type": "text/javascript; charset=utf-8"},
        )
        return
    store = control.audit
    if store is None:
        flow.response = json_response(503, {"error": "this gate keeps no audit"})
        return
    pending = control.pending.questions()
    arg = (query.get("id") or query.get("q") or [""])[0]
    try:
        before, after, number = (_number(query, k) for k in ("before", "after", "page"))
    except ValueError as exc:
        flow.response = html_response(400, pages.page("Bad address", f"<p>{exc}</p>"))
        return

    def render() -> http.Response:
        scanner = Scanner()  # (built here, in the worker: it compiles every detector)
        if path == ROOT:
            return html_response(200, pages.live_page(store, pending, before, after))
        if path == pages.LIVE_PATH:
            return json_response(200, pages.live(store, pending, before, after))
        if path == f"{ROOT}/sessions":
            return html_response(200, pages.sessions_page(store, scanner, number or 1))
        if path == request.PATH:
            one = request.request_page(store, arg, scanner)
            return (
                html_response(200, one)
                if one is not None
                else html_response(
                    404, pages.page("No such request", "<p>No such request in the audit.</p>")
                )
            )
        if path == f"{ROOT}/session":
            shown = pages.session_page(store, arg, scanner)
            return (
                html_response(200, shown)
                if shown is not None
                else html_response(
                    404, pages.page("No such session", "<p>No such session in the audit.</p>")
                )
            )
        if path == f"{ROOT}/search":
            return html_response(200, pages.search_page(store, arg, scanner))
        if path == f"{ROOT}/report":
            from gate.audit import html, report

            return html_response(
                200, pages.report_page(html.render(report.build(store.conn(), None)))
            )
        return html_response(404, pages.page("Not found", "<p>No such console page.</p>"))

    control.later(flow, render)


def _number(query: dict[str, list[str]], key: str) -> int | None:
    """A paging argument: a positive whole number, or absent."""
    given = (query.get(key) or [""])[0]
    if not given:
        return None
    if not given.isdigit() or int(given) < 1 or len(given) > 18:
        raise ValueError(f"{key} must be a positive whole number")
    return int(given)
