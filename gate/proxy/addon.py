"""The gate addon: screen each request before it leaves, record it, send it on (the
response side is gate/proxy/recorder.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loguru import logger
from mitmproxy import ctx, http

from gate import __version__, runs
from gate.agents import registry
from gate.ask import client, memory_team
from gate.ask.loosen import Loosenings
from gate.ask.park import Asker
from gate.ask.questions import Pending
from gate.audit.session import session_key
from gate.audit.store import AuditStore
from gate.config import Config
from gate.errors import GateError
from gate.lock import BRIDGE_SOURCE
from gate.proxy import chains, control, handed_back, replies, routing, team, websocket
from gate.proxy.recorder import ResponseRecorder
from gate.rules.layers import PolicyStore
from gate.screen import codings, upload
from gate.screen.content import SecretScreen
from gate.screen.disclose import Scrub
from gate.screen.envelope import Envelope, credential_headers, google_upstream
from gate.screen.fingerprints import IndexStore, Limits
from gate.screen.request import Blocked, Outbound, Screens, Verdict, screen
from gate.users import Users

HEALTH = "/_gate/health"
_CHARSET = re.compile(r"""charset\s*=\s*["']?([^"';\s]*)""", re.I)


class GateAddon:
    def __init__(
        self,
        config: Config,
        data_dir: Path,
        policies: PolicyStore,
        audit: AuditStore,
        on_ready: Callable[[str, int], None] | None = None,
        users: Users | None = None,
    ):
        self.config = config
        self.data_dir = data_dir
        self.policies = policies
        team_memory = memory_team.from_config(config, data_dir)  # None without a team key
        secrets = SecretScreen.load(data_dir, team_memory.key.value if team_memory else None)
        self.screens = Screens(
            IndexStore(Limits(config.max_files, config.max_file_bytes), config.projects), secrets
        )
        self.audit = audit
        self.chains = chains.ResponseCalls()
        self.recorder = ResponseRecorder(audit, self.chains)  # the response side, an addon too
        self.on_ready = on_ready
        self.pending = Pending()
        self.asker = Asker(config, data_dir, secrets.key, self.pending, team_memory)
        # A rule file changed so as to loosen the rules: a person is asked (gate/ask/loosen.py).
        self.loosenings = Loosenings(self.pending, policies.confirm)
        policies.on_loosen = self.loosenings.changed
        # A shared gate's control API signs people in with their own tokens (team.py).
        self.control = control.Control(
            self.pending,
            client.load_or_create_token(data_dir),
            audit,
            (users or Users(data_dir)) if team.is_shared(config) else None,
        )
        self.control.team = self.asker.team is not None
        self.control.policies = policies
        if (people := self.control.users) is not None:
            self.asker.still_allowed = lambda name: any(u.name == name for u in people.active())
        self._registered: Path | None = None
        # Named by /_gate/health instead of the data dir: `gate run` checks it against
        # server.json, which only this data dir's gate writes.
        self.instance = os.urandom(8).hex()

    # -- mitmproxy hooks -------------------------------------------------------------------

    def running(self) -> None:
        host, port = ctx.master.addons.get("proxyserver").listen_addrs()[0][:2]
        self.control.port = port
        self.loosenings.attach(asyncio.get_running_loop())
        # `gate pending` and friends find it here; a shared gate (HTTPS only) says which
        # certificate it serves, which they then require of it.
        shared_tls = self.control.users is not None and self.config.tls.on
        if self.control.users is None or shared_tls:
            cert = Path(self.config.tls.cert).resolve() if self.config.tls.cert else None
            self._registered = client.register(self.data_dir, host, port, cert)
        if self.on_ready is not None:
            self.on_ready(host, port)

    def done(self) -> None:
        if self._registered is not None:
            self._registered.unlink(missing_ok=True)
        if self.asker.team is not None:
            self.asker.team.close()

    async def request(self, flow: http.HTTPFlow) -> None:
        # Fail closed: mitmproxy forwards a flow whose addon raised, so nothing may escape here.
        try:
            screened = self._request(flow)
            if (later := flow.metadata.pop(control.LATER, None)) is not None:
                await asyncio.to_thread(later)  # a control page reading the audit
            if screened is not None:
                verdict = screened.verdict
                if verdict.asks:  # parked here until answered; other flows keep flowing
                    settled = await _while_connected(
                        flow,
                        self.asker.settle(verdict, screened.question_info(), screened.rescreen),
                    )
                    if settled is None:
                        self._withdrawn(flow)
                        return
                    verdict = settled
                self._send(flow, screened, verdict)
        except Blocked as exc:
            self._block(flow, replies.BLOCK_STATUS, str(exc), exc.withheld)
        except GateError as exc:  # e.g. a project rule file that became malformed
            self._block(flow, replies.BLOCK_STATUS, exc.diagnostics())
        except Exception as exc:
            logger.error("flow {} blocked: internal error {}", flow.id, type(exc).__name__)
            self._block(
                flow,
                500,
                f"gate could not screen this request ({type(exc).__name__});"
                " it was not sent. See gate's log, and report the bug if it repeats.",
            )

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        conn: websocket.Connection | None = flow.metadata.get("gate_ws")
        if flow.websocket is None:
            return
        message = flow.websocket.messages[-1]
        if conn is None and "gate_passthrough" in flow.metadata:
            return  # a host the egress policy tunnels: relayed unread, and recorded
        if conn is None:
            # Fail closed: a WebSocket gate did not set up for screening carries nothing out.
            if message.from_client:
                message.drop()
            return
        if not message.from_client:
            try:
                conn.from_server(message.content, self.audit)
            except Exception as exc:  # bookkeeping only: the event itself is relayed as is
                logger.warning("flow {}: provider event not read ({})", flow.id, type(exc).__name__)
            return
        if self._let_go(conn):
            self._refuse_frame(flow, message, f"user {conn.user!r} is no longer let in")
            return
        # Fail closed: a frame that could not be screened is dropped, and the agent told.
        try:
            content = conn.from_client(
                message.content,
                message.is_text,
                self.policies,
                self.screens,
                self.audit,
                self.asker.settle_now,
            )
        except (Blocked, GateError) as exc:
            self._refuse_frame(
                flow, message, exc.diagnostics() if isinstance(exc, GateError) else str(exc)
            )
        except Exception as exc:
            logger.error("flow {} frame dropped: internal error {}", flow.id, type(exc).__name__)
            self._refuse_frame(
                flow,
                message,
                f"gate could not screen this message ({type(exc).__name__}); it was not sent",
            )
        else:
            if content is not None:
                message.content = content

    def _let_go(self, conn: websocket.Connection) -> bool:
        """Whether a shared gate's user was revoked since the connection opened (or the
        users file became unreadable: fail closed)."""
        if conn.user is None or self.control.users is None:
            return False
        try:
            return self.control.users.by_name(conn.user) is None
        except Exception:
            return True

    def _refuse_frame(self, flow: http.HTTPFlow, message: Any, reason: str) -> None:
        message.drop()
        logger.warning("flow {} frame blocked: {}", flow.id, reason)
        ctx.master.commands.call(
            "inject.websocket",
            flow,
            True,
            websocket.error_event(f"gate blocked this request: {reason}"),
        )

    # -- the work --------------------------------------------------------------------------

    def _request(self, flow: http.HTTPFlow) -> _Screened | None:
        """Screen the request; None when gate answered it itself (health, control, 404)."""
        req = flow.request
        if flow.response is not None or "gate_passthrough" in flow.metadata:
            return None  # forward mode refused it, or relays it unread (proxy/forward.py)
        try:
            req.path = routing.normalise(req.path)  # what is routed, screened and sent
        except ValueError as exc:
            raise Blocked(f"gate cannot route this request: {exc}; it was not sent") from exc
        route: routing.Route | None = flow.metadata.get("gate_route")  # forward mode's
        if route is None and req.path.split("?", 1)[0] == HEALTH:
            self._health(flow)
            return None
        if route is None and req.path.startswith(control.PREFIX):
            self.control.handle(flow)
            return None
        reverse = route is None
        route = route or routing.resolve(req.path, self.config.upstreams)
        if route is None:
            flow.response = http.Response.make(
                404,
                replies.not_found(req.path, list(self.config.upstreams)),
                {"content-type": "application/json"},
            )
            return None
        flow.metadata["gate_route"] = route
        if reverse:  # the client reached gate by its own URL: URLs handed back point there
            flow.metadata["gate_base"] = handed_back.base(
                req.scheme, req.host_header or "", route.upstream.name, route.run_id
            )
        run = None
        if route.run_id is not None:
            run = runs.lookup(self.data_dir, route.run_id)
            if run is None:
                raise Blocked(
                    f"gate does not know run {route.run_id!r}: restart the agent with"
                    " `gate run`, or use a base URL without /_run/"
                )
        if run is None and _from_lock(flow):
            # Fail closed: a locked agent is screened as its run's project. Without the run
            # it could state any directory and be screened for that one's files instead.
            raise Blocked(
                "a request from inside `gate run --lock` must name its run (the base"
                " URL's /_run/ID, or the proxy URL gate run set); it was not sent"
            )
        if req.headers.get("upgrade"):
            # Fail closed: only upgrades whose frames gate can screen are let through.
            if not websocket.screenable(req.headers.get("upgrade", ""), route.path):
                raise Blocked(
                    "gate screens WebSocket traffic only for the Responses API;"
                    " configure the agent to use HTTP (agents fall back when the"
                    " upgrade is refused)"
                )
            flow.metadata["gate_ws"] = websocket.Connection(
                route, run, agent=run.agent if run else None, user=flow.metadata.get("gate_user")
            )
        agent = run.agent if run else registry.from_user_agent(req.headers.get("user-agent", ""))
        # Who sent it, kept for the audit whatever the verdict (a blocked row too, one whose
        # body gate could not read included).
        user = flow.metadata.get("gate_user")
        flow.metadata["gate_who"] = {
            "run_id": run.id if run else None,
            "agent": agent,
            "project_root": run.root if run else None,
            "session": session_key(
                req.headers, run.id if run else None, agent, route.upstream.name, user
            ),
            "user_name": user,
        }
        body = _decoded(req)
        flow.metadata["gate_body"] = body  # decoded once: a refusal's attribution reads it
        flow.metadata["gate_coding"] = ", ".join(req.headers.get_all("content-encoding")) or None
        outbound = Outbound(
            route.path,
            body,
            agent,
            run.cwd if run else None,
            route.upstream.unsafe_pass_non_json,
            headers=upload.headers_of(req.headers),
            root=run.root if run else None,
        )
        verdict = screen(outbound, self.policies, self.screens, self.chains.known)
        flow.metadata["gate_who"].update(model=verdict.model, project_root=verdict.project_root)
        up = route.upstream
        refusal = Envelope(self._scrub()).refusal(
            route.path,
            list(req.headers.items(multi=True)),
            google_upstream(up.name, up.host),
            credential_headers(up.name, up.host),
        )
        if refusal is not None:
            raise Blocked(refusal)
        return _Screened(
            self, route, run, outbound, verdict, flow.metadata["gate_who"]["session"], user
        )

    def _scrub(self) -> Scrub:
        indexes = self.screens.indexes.known() if self.screens.indexes else []
        return Scrub(self.screens.secrets, indexes)

    def _send(self, flow: http.HTTPFlow, screened: _Screened, verdict: Verdict) -> None:
        """Put the decided body on the flow, audit it, and route it upstream."""
        req, route, run, body = flow.request, screened.route, screened.run, screened.req.body
        agent = screened.req.agent
        sent = body if verdict.body is None else verdict.body
        if verdict.body is not None and _signed(req):
            # The signature covers the body: an edited body would be refused upstream, and
            # the original must not leave. Say what to do instead.
            raise Blocked(
                "gate must withhold content from this request, but its body is"
                " signed (AWS SigV4) and cannot be edited. Use a Bedrock API key"
                " (AWS_BEARER_TOKEN_BEDROCK) so gate can edit the body, or keep the"
                " denied content out of the conversation"
            )
        if "content-encoding" in req.headers or verdict.body is not None:
            if "content-encoding" in req.headers and _signed(req):
                raise Blocked(
                    "gate forwards a request body decoded, and this one is signed"
                    " (AWS SigV4) over its compressed bytes; send it uncompressed"
                )
            # What leaves is the decoded bytes gate screened (no coding to read otherwise),
            # and they are what the audit records.
            req.headers.pop("content-encoding", None)
            req.headers.pop("transfer-encoding", None)  # sent whole, with its length
            req.content = sent
        flow.metadata["gate_row"] = self._record(flow, route, run, agent, verdict, sent)
        flow.metadata["gate_t0"] = time.monotonic()
        up = route.upstream
        req.scheme, req.host, req.port = up.scheme, up.host, up.port
        req.path = up.base_path + route.path
        req.headers["host"] = up.url.split("://", 1)[1].split("/", 1)[0]

    def _record(
        self,
        flow: http.HTTPFlow,
        route: routing.Route,
        run: runs.Run | None,
        agent: str | None,
        verdict: Verdict,
        sent: bytes,
    ) -> int:
        # Written before the request leaves; if this raises, the request is blocked.
        scrub = self._scrub()
        return self.audit.record_request(
            run_id=run.id if run else None,
            agent=agent,
            upstream=route.upstream.name,
            session=session_key(
                flow.request.headers,
                run.id if run else None,
                agent,
                route.upstream.name,
                flow.metadata.get("gate_user"),
            ),
            user_name=flow.metadata.get("gate_user"),
            host=route.upstream.host,
            method=flow.request.method,
            path=scrub.path(routing.safe_path(route.path)),
            model=scrub.value(verdict.model),
            project_root=verdict.project_root,
            request_bytes=len(sent),
            verdict=(
                "modified"
                if verdict.body is not None
                else "unscreened"
                if verdict.format == "unscreened"
                else "forwarded"
            ),
            withheld=[_scrubbed(w.record(), scrub) for w in verdict.withheld],
            body=sent,
            content_encoding=flow.metadata.get("gate_coding"),
        )

    def _block(
        self,
        flow: http.HTTPFlow,
        status: int,
        message: str,
        withheld: tuple[dict[str, object], ...] = (),
    ) -> None:
        route: routing.Route | None = flow.metadata.get("gate_route")
        name = route.upstream.name if route else ""
        path = route.path if route else flow.request.path
        try:  # nothing the client sent is written down in clear when it held a finding
            scrub: Scrub | None = self._scrub()
            assert scrub is not None
            message, stored = scrub.text(message), scrub.path(routing.safe_path(path))
            records = [_scrubbed(dict(w), scrub) for w in withheld]
        except Exception as exc:
            logger.error("flow {}: block reason not checked ({})", flow.id, type(exc).__name__)
            scrub, records = None, []
            message, stored = "gate could not check the reason for this block", "?"
        flow.response = http.Response.make(
            status,
            replies.error(name, path, status, f"gate blocked this request: {message}"),
            {"content-type": "application/json", "x-gate-blocked": "1"},
        )
        logger.warning("flow {} blocked ({}): {}", flow.id, status, message)
        try:
            self.audit.record_request(
                upstream=name or "?",
                host=route.upstream.host if route else "?",
                method=flow.request.method,
                path=stored,
                request_bytes=len(flow.request.raw_content or b""),
                verdict="blocked",
                reason=message,
                status=status,
                withheld=records,
                **_attribution(flow, scrub),
            )
        except Exception as exc:  # the request is blocked either way
            logger.error("audit write failed for a blocked flow: {}", type(exc).__name__)

    def _withdrawn(self, flow: http.HTTPFlow) -> None:
        """The agent went away while its question waited: nothing is sent, and the audit
        says so (verdict `withdrawn`), with who asked."""
        route: routing.Route | None = flow.metadata.get("gate_route")
        flow.kill()
        scrub = self._scrub()
        logger.warning("flow {} withdrawn: the agent disconnected while gate asked", flow.id)
        try:
            self.audit.record_request(
                upstream=route.upstream.name if route else "?",
                host=route.upstream.host if route else "?",
                method=flow.request.method,
                path=scrub.path(routing.safe_path(route.path if route else flow.request.path)),
                request_bytes=len(flow.request.raw_content or b""),
                verdict="withdrawn",
                reason="the agent disconnected while gate was asking; nothing was sent",
                **_attribution(flow, scrub),
            )
        except Exception as exc:
            logger.error("audit write failed for a withdrawn flow: {}", type(exc).__name__)

    def _health(self, flow: http.HTTPFlow) -> None:
        # Answered only to a request that names this gate (not a page a browser was sent
        # to under another name), and it names no path of this machine.
        if refusal := self.control.refusal(flow):
            flow.response = http.Response.make(
                403, json.dumps({"error": refusal}).encode(), {"content-type": "application/json"}
            )
            return
        body: dict[str, Any] = {
            "ok": True,
            "version": __version__,
            "instance": self.instance,
            "forward": self.config.forward,
            "shared": self.control.users is not None,
        }
        flow.response = http.Response.make(
            200, json.dumps(body).encode(), {"content-type": "application/json"}
        )


def _decoded(req: http.Request) -> bytes:
    """The body as the provider will read it (gate/screen/codings.py); raises Blocked."""
    raw = req.raw_content or b""
    try:
        names = codings.declared(req.headers.get_all("content-encoding"))
        body = codings.decode(raw, names)
    except codings.Undecodable as exc:
        raise Blocked(f"gate cannot read this request body: {exc}; it was not sent") from exc
    charset = _CHARSET.search(req.headers.get("content-type", ""))
    if charset and charset.group(1).lower() not in ("utf-8", "utf8"):
        # JSON is UTF-8 (RFC 8259); a server that honours another charset reads other text.
        raise Blocked(
            f"gate reads request bodies as UTF-8, and this one declares charset"
            f" {charset.group(1)[:20]!r}; send it as UTF-8"
        )
    if raw and not body.strip():
        raise Blocked(
            "gate cannot screen this request: its body is not empty but decodes to"
            " nothing (or only whitespace); it was not sent"
        )
    return body


def _from_lock(flow: http.HTTPFlow) -> bool:
    """Whether the flow came through the lock's bridge (gate/lock/bridge.py)."""
    peer = flow.client_conn.peername[0] if flow.client_conn.peername else ""
    return peer == BRIDGE_SOURCE


def _signed(req: http.Request) -> bool:
    return str(req.headers.get("authorization", "")).startswith("AWS4-")


def _scrubbed(record: dict[str, object], scrub: Scrub) -> dict[str, object]:
    """A withheld item as recorded: a call id or tool name that held a finding is withheld."""
    for key in ("call_id", "tool"):
        if isinstance(value := record.get(key), str):
            record[key] = scrub.value(value)
    return record


async def _while_connected(flow: http.HTTPFlow, waiting: Awaitable[Verdict]) -> Verdict | None:
    """The settled verdict, or None when the agent disconnected first (the wait is then
    cancelled, which withdraws its question)."""
    task = asyncio.ensure_future(waiting)
    while not task.done():
        try:
            await asyncio.wait([task], timeout=0.25)
        except asyncio.CancelledError:  # the gate is stopping: the question goes with it
            task.cancel()
            raise
        if not task.done() and not flow.client_conn.connected:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            return None
    return task.result()


def _attribution(flow: http.HTTPFlow, scrub: Scrub | None) -> dict[str, Any]:
    """The agent, run, project, session and model of a request gate refused: the same
    attribution a sent request's row carries. The model is read from the decoded body when
    screening stopped before it did (a body gate could not screen may not be JSON); a
    model name that holds a finding is not written down (none when it cannot be checked)."""
    who = dict(flow.metadata.get("gate_who") or {})
    if (user := flow.metadata.get("gate_user")) is not None:
        who["user_name"] = user  # refused before gate_who was made: who sent it still counts
    if who and who.get("model") is None:
        # Never decoded again: a body gate could not decode (too large, say) has no model.
        try:
            parsed = json.loads(flow.metadata.get("gate_body") or b"")
        except ValueError:
            parsed = None
        model = parsed.get("model") if isinstance(parsed, dict) else None
        who["model"] = model[:200] if isinstance(model, str) else None
    if who:
        who["model"] = scrub.value(who.get("model")) if scrub is not None else None
    return who


@dataclass(frozen=True, slots=True)
class _Screened:
    """A screened request between its first verdict and the one that is sent."""

    addon: GateAddon
    route: routing.Route
    run: runs.Run | None
    req: Outbound
    verdict: Verdict
    session: str | None = None  # the conversation, which an answer's default scope covers
    user: str | None = None  # who sent it, on a shared gate: only they see its question

    def rescreen(self, approved: frozenset[str]) -> Verdict:
        a = self.addon
        return screen(replace(self.req, approved=approved), a.policies, a.screens, a.chains.known)

    def question_info(self) -> dict[str, Any]:
        """What a question says about its request."""
        return {
            "agent": self.req.agent,
            "upstream": self.route.upstream.name,
            "path": routing.safe_path(self.route.path),
            "model": self.verdict.model,
            "run_id": self.run.id if self.run else None,
            "session": self.session,
            "project_root": self.verdict.project_root,
            "user": self.user,
        }
