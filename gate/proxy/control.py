"""The control API, the approval page and the console (proxy/console.py), served by the
gate listener under /_gate/.

Loopback only, and every call carries the data dir's token: as a Bearer header (API) or
as the HttpOnly, SameSite=Strict cookie the page's start URL sets. A request whose Host is
not the gate's own loopback address is refused (DNS rebinding), so is a cross-origin
POST, and the page's forms carry a CSRF token.

On a shared gate (proxy/team.py) any client may reach it, over TLS only (a page served
under another name fails the browser's certificate check, which is what the Host check
does on loopback), and a person signs in with their person token (gp_...): each sees and
answers only the questions about their own requests; an admin, or the data dir's token,
sees and answers all. An agent token (gu_...) signs nobody in: the agent that holds it
must not answer the questions gate asks about it.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mitmproxy import http

from gate.ask import live, page
from gate.ask.choices import ANSWERS, Choice, Scope
from gate.ask.questions import DEFAULT_SCOPE, SCOPES, Answer, By, Pending, Question
from gate.audit.store import AuditStore
from gate.errors import GateError
from gate.proxy import console
from gate.rules.layers import PolicyStore
from gate.users import Kind, Users

PREFIX = "/_gate/"
API = "/_gate/api/pending"
RULES_API = "/_gate/api/rules"  # what this gate enforces for a project (`gate rules`)
UI = "/_gate/ui"
COOKIE = "gate_control"
_LOOPBACK = ("127.0.0.1", "::1", "::ffff:127.0.0.1")
# (no-referrer would make the browser send `Origin: null` with the page's own forms)
_HEADERS = {
    "cache-control": "no-store",
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "same-origin",
}
HEADERS = _HEADERS


# Set on a flow whose answer reads the audit: the addon runs it in a worker thread, off the
# event loop that relays every agent's stream (the flow holds a 503 until it has run).
LATER = "gate_control_later"


@dataclass(frozen=True, slots=True)
class Who:
    """Who a control call signed in as: a user of a shared gate, or (name None) the holder
    of the data dir's token."""

    name: str | None
    admin: bool

    def sees(self, q: Question) -> bool:
        return self.admin or q.request.get("user") == self.name


class Control:
    def __init__(
        self,
        pending: Pending,
        token: str,
        audit: AuditStore | None = None,
        users: Users | None = None,
    ):
        self.pending = pending
        self.token = token
        self.audit = audit  # for what the page says about earlier requests (None: nothing)
        self.users = users  # set on a shared gate: people sign in with their own tokens
        self.port = 0  # set once listening: the Host a request must name
        self.team = False  # a team store is configured: the page offers "for the team"
        self.policies: PolicyStore | None = None  # the rules this gate enforces

    def handle(self, flow: http.HTTPFlow) -> None:
        """Answer a /_gate/ request (never forwarded anywhere)."""
        req = flow.request
        if refusal := self.refusal(flow):
            flow.response = _json(403, {"error": refusal})
            return
        path = req.path.split("?", 1)[0]
        if path == console.ROOT or path.startswith(console.ROOT + "/"):
            console.handle(self, flow)
        elif path == UI and req.method == "GET":
            self._page(flow)
        elif path in (live.SCRIPT_PATH, live.QUESTIONS_PATH) and req.method == "GET":
            self._live(flow, path)
        elif path == f"{UI}/answer" and req.method == "POST":
            self._form(flow)
        elif (who := self._bearer(req)) is None:
            flow.response = _json(
                401,
                {
                    "error": "missing, wrong or revoked control token"
                    f" (send Authorization: Bearer <{self._token_hint()}>)"
                },
            )
        elif path == API and req.method == "GET":
            flow.response = _json(200, {"pending": [q.to_json() for q in self._visible(who)]})
        elif path.startswith(API + "/") and req.method == "POST":
            self._api_answer(flow, path[len(API) + 1 :], who)
        elif path == RULES_API and req.method == "GET":
            self._rules(flow, who)
        else:
            flow.response = _json(404, {"error": f"no control endpoint {req.method} {path}"})

    # -- checks ----------------------------------------------------------------------------

    def refusal(self, flow: http.HTTPFlow) -> str | None:
        """Why a request to gate itself is refused (None: it is not)."""
        if self.users is not None:
            return _cross_site(flow, {flow.request.headers.get("host", "")}, "https://")
        peer = flow.client_conn.peername[0] if flow.client_conn.peername else ""
        if peer not in _LOOPBACK:
            return "the control API answers loopback clients only"
        hosts = {f"{h}:{self.port}" for h in ("127.0.0.1", "localhost", "[::1]")}
        if flow.request.headers.get("host", "") not in hosts:
            return "refused: the Host header does not name this gate (DNS rebinding?)"
        return _cross_site(flow, hosts, "http://")

    def identify(self, given: str) -> Who | None:
        """Who this token signs in (None: nobody). A revoked user is nobody at once."""
        if not given:
            return None
        if hmac.compare_digest(given.encode(), self.token.encode()):
            return Who(None, admin=True)
        if self.users is not None and (user := self.users.by_token(given, Kind.PERSON)):
            return Who(user.name, user.admin)
        return None

    def _bearer(self, req: http.Request) -> Who | None:
        return self.identify(req.headers.get("authorization", "").removeprefix("Bearer ").strip())

    def sign_in_cookie(self, token: str) -> str:
        """The one Set-Cookie value a sign-in (the approval page's, the console's) sends:
        never readable by the page's scripts, sent only to gate's own pages from its own
        pages, and on a shared gate (which takes HTTPS only) never over plain HTTP."""
        secure = "; Secure" if self.users is not None else ""
        return f"{COOKIE}={token}; HttpOnly; SameSite=Strict; Path={PREFIX}{secure}"

    def _cookie(self, req: http.Request) -> Who | None:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(req.headers.get("cookie", ""))
        except Exception:  # a malformed cookie header is just no cookie
            return None
        return self.identify(jar[COOKIE].value if COOKIE in jar else "")

    def _csrf(self, who: Who) -> str:
        """The page's form token, one per person signed in."""
        label = b"gate csrf" + (b"\0" + who.name.encode() if who.name is not None else b"")
        return hmac.new(self.token.encode(), label, hashlib.sha256).hexdigest()

    def _visible(self, who: Who) -> list[Question]:
        return [q for q in self.pending.questions() if who.sees(q)]

    def _token_hint(self) -> str:
        if self.users is not None:
            return "your person token (gp_...) from `gate users add`"
        return "token from control.token in gate's data dir"

    # -- the API ---------------------------------------------------------------------------

    def _api_answer(self, flow: http.HTTPFlow, qid: str, who: Who) -> None:
        try:
            body = json.loads(flow.request.get_content(strict=True) or b"{}")
        except ValueError:
            flow.response = _json(400, {"error": "the body must be a JSON object"})
            return
        if not isinstance(body, dict):
            flow.response = _json(400, {"error": "the body must be a JSON object"})
            return
        status, reply = self._answer(
            qid, body.get("answer"), body.get("remember", DEFAULT_SCOPE), who
        )
        flow.response = _json(status, reply)

    def _answer(self, qid: str, answer: Any, remember: Any, who: Who) -> tuple[int, dict[str, Any]]:
        if answer not in ANSWERS:
            return 400, {"error": f"answer must be one of {', '.join(ANSWERS)}"}
        if remember not in SCOPES:
            return 400, {"error": f"remember must be one of {', '.join(SCOPES)}"}
        if not who.admin and not any(q.id == qid for q in self._visible(who)):
            # Another user's question is as unknown as one that never was.
            return 404, {"error": f"no pending question {qid!r}"}
        if (q := self.pending.get(qid)) is not None and answer not in q.answers:
            return 400, {"error": f"question {qid} takes {' or '.join(q.answers)}"}
        if q is not None and q.once:
            # Loosening a rule is confirmed edit by edit: an answer never carries over.
            if remember not in (Scope.ONCE, DEFAULT_SCOPE):
                return 400, {
                    "error": f"question {qid} is answered once: it is never remembered"
                    " (answer without --remember)"
                }
            remember = Scope.ONCE
        try:
            self.pending.answer(qid, Answer(Choice(answer), By.PERSON, Scope(remember)))
        except KeyError:
            return 404, {"error": f"no pending question {qid!r}"}
        except ValueError as exc:
            return 409, {"error": str(exc)}
        reply = {"ok": True, "id": qid, "answer": answer, "remember": remember}
        return 200, reply | ({"kind": q.kind} if q is not None else {})

    def _rules(self, flow: http.HTTPFlow, who: Who) -> None:
        """What this gate enforces for a project right now: its rule files' warnings (a
        file kept at its last good rules, rules held until a person confirms loosening
        them), which a fresh `gate rules` cannot know."""
        root = (parse_qs(urlsplit(flow.request.path).query).get("project") or [""])[0]
        if not who.admin:  # a shared gate's host paths are its operator's business
            flow.response = _json(403, {"error": "only an admin sees a gate's rules"})
        elif self.policies is None or not os.path.isabs(root):
            flow.response = _json(400, {"error": "name an absolute project directory"})
        else:
            policies = self.policies
            self._later(flow, lambda: _json(*_enforced(policies, root)))

    # -- the page --------------------------------------------------------------------------

    def _page(self, flow: http.HTTPFlow) -> None:
        query = parse_qs(urlsplit(flow.request.path).query)
        given = (query.get("token") or [""])[0]
        if self.identify(given) is not None:
            # Trade the token in the URL for a cookie, and drop it from the address bar.
            flow.response = http.Response.make(
                303, b"", {**_HEADERS, "location": UI, "set-cookie": self.sign_in_cookie(given)}
            )
            return
        if (who := self._cookie(flow.request)) is None:
            flow.response = _html(401, page.unauthorised())
            return
        note = (query.get("note") or [""])[0]
        questions, csrf = self._visible(who), self._csrf(who)
        self._later(
            flow,
            lambda: _html(
                200,
                page.render(questions, csrf, note, self._earlier(questions), who.name, self.team),
            ),
        )

    def _live(self, flow: http.HTTPFlow, path: str) -> None:
        """The page's script, and the cards it adds (cookie only, as the page)."""
        if (who := self._cookie(flow.request)) is None:
            flow.response = _json(401, {"error": "not signed in"})
            return
        if path == live.SCRIPT_PATH:
            flow.response = http.Response.make(
                200,
                live.SCRIPT.encode(),
                {**_HEADERS, "content-type": "text/javascript; charset=utf-8"},
            )
            return
        questions, csrf = self._visible(who), self._csrf(who)

        def cards() -> http.Response:
            earlier = self._earlier(questions)
            return _json(
                200,
                {
                    "questions": [
                        {
                            "id": q.id,
                            "html": page.fragment(q, csrf, earlier.get(q.id, {}), self.team),
                        }
                        for q in questions
                    ]
                },
            )

        self._later(flow, cards)

    def _earlier(self, questions: list[Question]) -> dict[str, page.Earlier]:
        """Per question, which of its values this conversation already sent (audit)."""
        if self.audit is None:
            return {}
        from gate.audit.earlier import sent_before

        out: dict[str, page.Earlier] = {}
        for q in questions:
            found = sent_before(self.audit, q.request.get("session"), q.findings)
            out[q.id] = {i: (e.request, e.ts) for i, e in found.items()}
        return out

    def signed_in(self, req: http.Request) -> bool:
        """Whether the request carries the page's cookie (the console's sign-in too). The
        console shows every request in the audit: on a shared gate, to an admin only."""
        who = self._cookie(req)
        return who is not None and (self.users is None or who.admin)

    def later(self, flow: http.HTTPFlow, make: Callable[[], http.Response]) -> None:
        """Answer with `make()`, run in a worker thread by the addon."""
        self._later(flow, make)

    @staticmethod
    def _later(flow: http.HTTPFlow, make: Callable[[], http.Response]) -> None:
        # Fail closed: a flow nobody finished answers 503, it is never forwarded.
        flow.response = _json(503, {"error": "gate did not finish this page"})

        def run() -> None:
            try:
                flow.response = make()
            except Exception as exc:  # a damaged audit: say so, never forward
                flow.response = _json(
                    500, {"error": f"gate could not read its audit ({type(exc).__name__})"}
                )

        flow.metadata[LATER] = run

    def _form(self, flow: http.HTTPFlow) -> None:
        """An answer from the page: the page's script sends it with fetch and FETCH_HEADER
        (answered in JSON, the page stays); a plain form post (no script) is redirected
        back to the page. Both need the cookie and the form's CSRF token."""
        fetched = flow.request.headers.get(live.FETCH_HEADER) == "1"
        if (who := self._cookie(flow.request)) is None:
            flow.response = (
                _json(401, {"error": "not signed in: open the page again from gate's URL"})
                if fetched
                else _html(401, page.unauthorised())
            )
            return
        form = parse_qs(flow.request.get_text(strict=False) or "")
        csrf = (form.get("csrf") or [""])[0]
        if not hmac.compare_digest(csrf.encode(), self._csrf(who).encode()):
            refused = "Refused: the form's CSRF token is wrong. Reload the page and try again."
            flow.response = (
                _json(403, {"error": refused}) if fetched else _html(403, page.message(refused))
            )
            return
        answer, _, remember = (form.get("choice") or [""])[0].partition(":")
        qid = (form.get("id") or [""])[0]
        status, reply = self._answer(qid, answer, remember or DEFAULT_SCOPE, who)
        note = (
            page.answered(qid, answer, reply["remember"], reply.get("kind"))
            if status == 200
            else ""
        )
        if fetched:
            flow.response = _json(status, {**reply, "note": note} if note else reply)
            return
        flow.response = http.Response.make(
            303, b"", {**_HEADERS, "location": f"{UI}?note={_quote(note or reply['error'])}"}
        )


def _enforced(policies: PolicyStore, root: str) -> tuple[int, dict[str, Any]]:
    if not os.path.isdir(root):
        return 400, {"error": f"{root} is not a directory"}
    try:
        warnings = list(policies.policy_for(root).warnings)
    except GateError as exc:  # a project file that never loaded: its requests are blocked
        warnings = [
            exc.diagnostics().replace("\n  hint:", "; hint:")
            + " (this gate blocks the requests that need this file until it is fixed)"
        ]
    return 200, {"project_root": root, "warnings": warnings}


def json_response(status: int, body: dict[str, Any]) -> http.Response:
    return _json(status, body)


def html_response(status: int, text: str) -> http.Response:
    return _html(status, text)


def _json(status: int, body: dict[str, Any]) -> http.Response:
    return http.Response.make(
        status, json.dumps(body).encode(), {**_HEADERS, "content-type": "application/json"}
    )


def _html(status: int, text: str) -> http.Response:
    return http.Response.make(
        status,
        text.encode(),
        {
            **_HEADERS,
            "content-type": "text/html; charset=utf-8",
            "content-security-policy": "default-src 'none'; style-src 'unsafe-inline';"
            " script-src 'self'; connect-src 'self';"
            " form-action 'self'; frame-ancestors 'none'",
        },
    )


def _cross_site(flow: http.HTTPFlow, hosts: set[str], scheme: str) -> str | None:
    origin = flow.request.headers.get("origin")
    if origin is not None and origin.removeprefix(scheme) not in hosts - {""}:
        return "refused: cross-origin request"
    site = flow.request.headers.get("sec-fetch-site")
    if flow.request.method != "GET" and site not in (None, "same-origin", "none"):
        return "refused: cross-site request"
    return None


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")
