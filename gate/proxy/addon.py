"""The gate addon: screen each request before it leaves, record it, send it on (the
response side is gate/proxy/recorder.py)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from loguru import logger
from mitmproxy import ctx, http
from mitmproxy.websocket import WebSocketMessage

from gate import __version__, runs
from gate.agents import registry
from gate.ask import client, memory_team
from gate.ask.loosen import Loosenings
from gate.ask.park import Asker
from gate.ask.questions import Pending
from gate.audit.records import Attribution
from gate.audit.session import session_key
from gate.audit.store import AuditStore
from gate.config import Config
from gate.errors import GateError
from gate.lock import BRIDGE_SOURCE
from gate.proxy import (
    chains,
    control,
    handed_back,
    pipeline,
    replies,
    routing,
    team,
    websocket,
    ws_control,
)
from gate.proxy.recorder import ResponseRecorder
from gate.rules.layers import PolicyStore
from gate.screen import codings, upload
from gate.screen import secrets as secrets_module
from gate.screen.content import SecretScreen
from gate.screen.disclose import Scrub
from gate.screen.envelope import Envelope, credential_headers, google_upstream
from gate.screen.fingerprints import IndexStore, Limits, WalkNeeded
from gate.screen.item_cache import ItemCache
from gate.screen.request import Blocked, Outbound, Screens, Verdict, screen
from gate.screen.scan_pool import ScanPool
from gate.users import Users

HEALTH = "/_gate/health"
# What decides a request's verdict: gate.screen.request.screen, or a unit test's own.
Screener = Callable[[Outbound, PolicyStore, Screens, Callable[[str], Any]], Verdict]
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
        offload: pipeline.Offload | None = None,
        *,
        screens: Screens | None = None,
        screener: Screener = screen,
    ):
        """Every part can be passed in (unit tests do, with mitmproxy's tflow); what is not
        is built from config and data_dir as `gate serve` runs it."""
        self.config = config
        self.data_dir = data_dir
        self.policies = policies
        team_memory = memory_team.from_config(config, data_dir)  # None without a team key
        if screens is None:
            key = team_memory.key.value if team_memory else None
            limits = Limits(config.max_files, config.max_file_bytes)
            # A cold body is screened in worker processes, off this one's interpreter lock.
            screens = Screens(
                IndexStore(limits, config.projects),
                SecretScreen.load(data_dir, key),
                items=ItemCache(pool=ScanPool(secrets_module.BUDGET)),
            )
        if screens.secrets is None:
            raise ValueError("a gate needs a secret screen (its key also keys answers)")
        self.screens = screens
        secrets = screens.secrets
        self.screener = screener  # the request's verdict: gate.screen.request.screen
        self.audit = audit
        self.chains = chains.ResponseCalls()
        self.recorder = ResponseRecorder(audit, self.chains)  # the response side, an addon too
        self.on_ready = on_ready
        # Screening and audit writes run here, off the event loop (tests pass one in).
        self.offload = offload or pipeline.Offload()
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
        self.runs = runs.Known(data_dir)
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
        self.offload.close()
        if self.screens.items is not None and self.screens.items.pool is not None:
            self.screens.items.pool.close()
        if self._registered is not None:
            self._registered.unlink(missing_ok=True)
        if self.asker.team is not None:
            self.asker.team.close()

    async def request(self, flow: http.HTTPFlow) -> None:
        # Fail closed: mitmproxy forwards a flow whose addon raised, so nothing may escape here.
        try:
            job = self._admit(flow)
            if (later := flow.metadata.pop(control.LATER, None)) is not None:
                await asyncio.to_thread(later)  # a control page reading the audit
            if job is None:
                return
            # Screened on a worker thread, from what was read off the flow: the loop relays
            # every other flow meanwhile, and this one waits (it is never sent before).
            try:
                screened = await self._screened(job)
            finally:
                job.notes.put(flow)  # who sent it, for the audit whatever the verdict
            if "gate_ws" in flow.metadata:  # its control frames are screened as they come
                flow.metadata[ws_control.CHECK] = self._control_holds
            verdict = screened.verdict
            if verdict.asks:  # parked here until answered; other flows keep flowing
                settled = await _while_connected(
                    flow,
                    self.asker.settle(
                        verdict,
                        pipeline.question_info(screened.origin, verdict),
                        lambda approved: self.offload.run(screened.rescreen, approved),
                    ),
                )
                if settled is None:
                    await self._withdrawn(flow)
                    return
                verdict = settled
            ready = await self.offload.run(self._sendable, screened, verdict)
            self._send(flow, screened, ready)
        except Blocked as exc:
            await self._block(flow, replies.BLOCK_STATUS, str(exc), exc.withheld)
        except GateError as exc:  # e.g. a project rule file that became malformed
            await self._block(flow, replies.BLOCK_STATUS, exc.diagnostics())
        except Exception as exc:
            logger.error("flow {} blocked: internal error {}", flow.id, type(exc).__name__)
            await self._block(
                flow,
                500,
                f"gate could not screen this request ({type(exc).__name__});"
                " it was not sent. See gate's log, and report the bug if it repeats.",
            )

    async def websocket_message(self, flow: http.HTTPFlow) -> None:
        # mitmproxy awaits this before it hands over the connection's next message (its
        # layer pauses on a hook); the connection's own lock keeps that order here too, so
        # a later frame never overtakes one being screened, nor an event the calls it
        # answers came in.
        if flow.websocket is None:
            return
        message = flow.websocket.messages[-1]  # read now: this hook's, whoever waits
        conn: websocket.Connection | None = flow.metadata.get("gate_ws")
        if conn is None and "gate_passthrough" in flow.metadata:
            return  # relayed unread: forward mode screened it as opaque text (forward.py)
        if conn is None:
            # Fail closed: a WebSocket gate did not set up for screening carries nothing out.
            if message.from_client:
                message.drop()
            return
        async with conn.turn:
            await self._message(flow, conn, message)

    async def _message(
        self, flow: http.HTTPFlow, conn: websocket.Connection, message: WebSocketMessage
    ) -> None:
        if not message.from_client:
            try:
                conn.from_server(message.content, self.audit)
            except Exception as exc:  # bookkeeping only: the event itself is relayed as is
                logger.warning("flow {}: provider event not read ({})", flow.id, type(exc).__name__)
            return
        # The frame is screened as an HTTP body is, by the same steps (_screened, _sendable):
        # the connection's route, run, agent, user and session stand for its headers.
        job = _Job(
            route=conn.route,
            headers=http.Headers(),  # a frame has none; the upgrade's were checked as it left
            raw=message.content,
            method="WS",
            user=conn.user,
            from_lock=_from_lock(flow),
            ws=conn,
            is_text=message.is_text,
        )
        # Fail closed: a frame that could not be screened is dropped, and the agent told.
        try:
            ready = await self._frame(job)
        except Blocked as exc:
            await self._refuse_frame(flow, job, message, str(exc), exc.withheld)
        except GateError as exc:
            await self._refuse_frame(flow, job, message, exc.diagnostics())
        except Exception as exc:
            logger.error("flow {} frame dropped: internal error {}", flow.id, type(exc).__name__)
            await self._refuse_frame(
                flow,
                job,
                message,
                f"gate could not screen this message ({type(exc).__name__}); it was not sent",
            )
        else:
            conn.row = ready.row
            if ready.content is not None:
                message.content = ready.content

    async def _frame(self, job: _Job) -> _Ready:
        """A frame's first verdict, settled and recorded; raises to refuse it. It cannot be
        parked while a person is asked (the connection carries the whole turn, and waiting
        would hold the provider's events too), so ask findings get the default at once."""
        screened = await self._screened(job)
        verdict = screened.verdict
        if verdict.asks:
            info = pipeline.question_info(screened.origin, verdict)
            verdict = await self.offload.run(self.asker.settle_now, verdict, info)
        return await self.offload.run(self._sendable, screened, verdict)

    def _let_go(self, conn: websocket.Connection) -> bool:
        """Whether a shared gate's user was revoked since the connection opened (or the
        users file became unreadable: fail closed)."""
        if conn.user is None or self.control.users is None:
            return False
        try:
            return self.control.users.by_name(conn.user) is None
        except Exception:
            return True

    async def _refuse_frame(
        self,
        flow: http.HTTPFlow,
        job: _Job,
        message: WebSocketMessage,
        reason: str,
        withheld: tuple[dict[str, object], ...] = (),
    ) -> None:
        message.drop()
        conn, route = job.ws, job.route
        assert conn is not None
        refusal = pipeline.Refusal(
            name=route.upstream.name,
            host=route.upstream.host,
            path=route.path,
            method="WS",
            size=len(message.content),
            who=job.notes.who or pipeline.of_origin(conn.origin()),
            user=conn.user,
            body=job.notes.body,
        )
        reason = await self._refused(flow, refusal, replies.BLOCK_STATUS, reason, withheld)
        logger.warning("flow {} frame blocked: {}", flow.id, reason)
        ctx.master.commands.call(
            "inject.websocket",
            flow,
            True,
            websocket.error_event(f"gate blocked this request: {reason}"),
        )

    # -- the work --------------------------------------------------------------------------

    def _admit(self, flow: http.HTTPFlow) -> _Job | None:
        """On the loop: route the request, and read off the flow what screening needs.
        None when gate answered it itself (health, control, 404) or lets it by."""
        req = flow.request
        if flow.response is not None or "gate_passthrough" in flow.metadata:
            return None  # forward mode refused it, or relays it unread (proxy/forward.py)
        if req.trailers:
            # Fail closed: trailers are headers that follow the body (HTTP/2 relays them to
            # the provider after it); gate screens what a request carries before it leaves.
            raise Blocked(
                "the request carries HTTP trailers, which gate does not forward; send"
                " those fields as headers. It was not sent"
            )
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
        return _Job(
            route=route,
            headers=req.headers.copy(),
            raw=req.raw_content or b"",
            method=req.method,
            user=flow.metadata.get("gate_user"),
            from_lock=_from_lock(flow),
        )

    async def _screened(self, job: _Job) -> _Screened:
        """The request's first verdict: a small body's on the loop, unless an index it is
        screened against must be built first (a walk of the project, which must not run on
        the loop: it goes to a thread, with the rest); a large or coded body's on a thread."""
        if pipeline.small(job.raw, "content-encoding" in job.headers):
            indexes = self.screens.indexes
            try:
                with indexes.no_walks() if indexes else contextlib.nullcontext():
                    return self._screen(job)
            except WalkNeeded:
                pass  # screened again on a thread, which builds the index
        return await self.offload.run(self._screen, job)

    def _screen(self, job: _Job) -> _Screened:
        """On a worker thread: the request's first verdict; raises when it must not leave."""
        route, headers, notes, conn = job.route, job.headers, job.notes, job.ws
        if conn is not None:
            if self._let_go(conn):
                raise Blocked(f"user {conn.user!r} is no longer let in")
            if not job.is_text:  # the provider reads text frames: JSON is text
                raise Blocked("gate cannot screen a binary WebSocket message")
        run = None
        if route.run_id is not None:
            run = self.runs.lookup(route.run_id)
            if run is None:
                raise Blocked(
                    f"gate does not know run {route.run_id!r}: restart the agent with"
                    " `gate run`, or use a base URL without /_run/"
                )
        if run is None and job.from_lock:
            # Fail closed: a locked agent is screened as its run's project. Without the run
            # it could state any directory and be screened for that one's files instead.
            raise Blocked(
                "a request from inside `gate run --lock` must name its run (the base"
                " URL's /_run/ID, or the proxy URL gate run set); it was not sent"
            )
        if conn is not None:
            agent, session = conn.agent, conn.session  # the upgrade's, for each of its frames
        else:
            agent = run.agent if run else registry.from_user_agent(headers.get("user-agent", ""))
            session = session_key(
                headers, run.id if run else None, agent, route.upstream.name, job.user
            )
        if headers.get("upgrade"):
            # Fail closed: only upgrades whose frames gate can screen are let through.
            if not websocket.screenable(headers.get("upgrade", ""), route.path):
                raise Blocked(
                    "gate screens WebSocket traffic only for the Responses API;"
                    " configure the agent to use HTTP (agents fall back when the"
                    " upgrade is refused)"
                )
            notes.ws = websocket.Connection(route=route, run=run, agent=agent, user=job.user)
        # Who sent it, kept for the audit whatever the verdict (a blocked row too, one whose
        # body gate could not read included).
        notes.who = Attribution(
            run_id=run.id if run else None,
            agent=agent,
            project_root=run.root if run else None,
            session=session,
            user_name=job.user,
        )
        body = notes.body = _decoded(job.raw, headers)  # a refusal's attribution reads it
        notes.coding = ", ".join(headers.get_all("content-encoding")) or None
        outbound = Outbound(
            path=route.path,
            body=body,
            agent=agent,
            project_root=run.cwd if run else None,
            unsafe_pass_non_json=route.upstream.unsafe_pass_non_json,
            headers=upload.headers_of(headers),
            root=run.root if run else None,
            session=session,
        )
        known = conn.known if conn is not None else self.chains.known
        verdict = self.screener(outbound, self.policies, self.screens, known)
        notes.who = replace(notes.who, model=verdict.model, project_root=verdict.project_root)
        up = route.upstream
        # A frame carries no path or headers of its own: the upgrade's were checked here as
        # it left, and cannot be taken back.
        refusal = None
        if conn is None:
            refusal = Envelope(self._scrub()).refusal(
                route.path,
                list(headers.items(multi=True)),
                google_upstream(up.name, up.host),
                credential_headers(up.name, up.host),
            )
        if refusal is not None:
            raise Blocked(refusal)
        origin = pipeline.Origin(
            route=route, run=run, agent=agent, session=session, user=job.user, method=job.method
        )
        return _Screened(
            addon=self, origin=origin, req=outbound, verdict=verdict, job=job, known=known
        )

    def _control_holds(self, payload: bytes) -> bool:
        """Whether a WebSocket control frame's payload (a ping's, or a close's reason)
        holds a denied file's value or a likely secret."""
        return self._scrub().holds_bytes(payload)

    def _scrub(self) -> Scrub:
        indexes = self.screens.indexes.known() if self.screens.indexes else []
        return Scrub(self.screens.secrets, indexes)

    def _sendable(self, screened: _Screened, verdict: Verdict) -> _Ready:
        """On a worker thread: the decided body, recorded. Written before the request
        leaves; if this raises, the request is blocked."""
        job, body = screened.job, screened.req.body
        sent = body if verdict.body is None else verdict.body
        signed = str(job.headers.get("authorization", "")).startswith("AWS4-")
        if verdict.body is not None and signed:
            # The signature covers the body: an edited body would be refused upstream, and
            # the original must not leave. Say what to do instead.
            raise Blocked(
                "gate must withhold content from this request, but its body is"
                " signed (AWS SigV4) and cannot be edited. Use a Bedrock API key"
                " (AWS_BEARER_TOKEN_BEDROCK) so gate can edit the body, or keep the"
                " denied content out of the conversation"
            )
        encoded = "content-encoding" in job.headers
        if encoded and signed:
            raise Blocked(
                "gate forwards a request body decoded, and this one is signed"
                " (AWS SigV4) over its compressed bytes; send it uncompressed"
            )
        row = pipeline.record_sent(
            self.audit,
            self._scrub(),
            screened.origin,
            verdict,
            sent,
            modified=verdict.body is not None,
            coding=job.notes.coding,
        )
        # What leaves is the decoded bytes gate screened (no coding to read otherwise),
        # and they are what the audit records.
        return _Ready(row, sent if encoded or verdict.body is not None else None)

    def _send(self, flow: http.HTTPFlow, screened: _Screened, ready: _Ready) -> None:
        """On the loop: put the recorded body on the flow, and route it upstream."""
        req, route = flow.request, screened.origin.route
        if ready.content is not None:
            req.headers.pop("content-encoding", None)
            req.headers.pop("transfer-encoding", None)  # sent whole, with its length
            req.content = ready.content
        elif req.raw_content and not (
            "content-length" in req.headers or "transfer-encoding" in req.headers
        ):
            # HTTP/2 frames a body by its stream and needs no length; an HTTP/1 upstream
            # (a local model server) does, or it reads the request as having none.
            req.headers["content-length"] = str(len(req.raw_content))
        flow.metadata["gate_row"] = ready.row
        flow.metadata["gate_t0"] = time.monotonic()
        up = route.upstream
        req.scheme, req.host, req.port = up.scheme, up.host, up.port
        req.path = up.base_path + route.path
        req.headers["host"] = up.url.split("://", 1)[1].split("/", 1)[0]

    async def _block(
        self,
        flow: http.HTTPFlow,
        status: int,
        message: str,
        withheld: tuple[dict[str, object], ...] = (),
    ) -> None:
        refusal = _refusal_of(flow, unrouted="")
        message = await self._refused(flow, refusal, status, message, withheld)
        flow.response = http.Response.make(
            status,
            replies.error(
                refusal.name, refusal.path, status, f"gate blocked this request: {message}"
            ),
            {"content-type": "application/json", "x-gate-blocked": "1"},
        )
        logger.warning("flow {} blocked ({}): {}", flow.id, status, message)

    async def _refused(
        self,
        flow: http.HTTPFlow,
        refusal: pipeline.Refusal,
        status: int,
        message: str,
        withheld: tuple[dict[str, object], ...],
    ) -> str:
        """The reason as the agent is told it, once the refusal is in the audit (both on a
        worker thread); the generic reason when it cannot be checked for findings."""
        try:
            return await self.offload.run(
                pipeline.record_refusal, self.audit, self._scrub, refusal, status, message, withheld
            )
        except Exception as exc:  # the request is refused either way
            logger.error("flow {}: block reason not checked ({})", flow.id, type(exc).__name__)
            return pipeline.UNCHECKED

    async def _withdrawn(self, flow: http.HTTPFlow) -> None:
        """The agent went away while its question waited: nothing is sent, and the audit
        says so (verdict `withdrawn`), with who asked."""
        flow.kill()
        logger.warning("flow {} withdrawn: the agent disconnected while gate asked", flow.id)
        refusal = _refusal_of(flow, unrouted="?")
        try:
            await self.offload.run(pipeline.record_withdrawn, self.audit, self._scrub, refusal)
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


def _decoded(raw: bytes, headers: http.Headers) -> bytes:
    """The body as the provider will read it (gate/screen/codings.py); raises Blocked."""
    try:
        names = codings.declared(headers.get_all("content-encoding"))
        body = codings.decode(raw, names)
    except codings.Undecodable as exc:
        raise Blocked(f"gate cannot read this request body: {exc}; it was not sent") from exc
    charset = _CHARSET.search(headers.get("content-type", ""))
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


def _refusal_of(flow: http.HTTPFlow, unrouted: str) -> pipeline.Refusal:
    """What a refused or withdrawn request's audit row says of it (`unrouted`: the upstream
    name of one gate could not route)."""
    route: routing.Route | None = flow.metadata.get("gate_route")
    return pipeline.Refusal(
        name=route.upstream.name if route else unrouted,
        host=route.upstream.host if route else "?",
        path=route.path if route else flow.request.path,
        method=flow.request.method,
        size=len(flow.request.raw_content or b""),
        who=flow.metadata.get("gate_who"),
        user=flow.metadata.get("gate_user"),
        body=flow.metadata.get("gate_body"),
    )


def _from_lock(flow: http.HTTPFlow) -> bool:
    """Whether the flow came through the lock's bridge (gate/lock/bridge.py)."""
    peer = flow.client_conn.peername[0] if flow.client_conn.peername else ""
    return peer == BRIDGE_SOURCE


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


@dataclass(slots=True)
class _Notes:
    """What screening learnt about a request that a refusal's audit row needs too; put on
    the flow by the loop once the worker is done, whatever its verdict."""

    who: Attribution | None = None
    body: bytes | None = None
    coding: str | None = None
    ws: websocket.Connection | None = None

    def put(self, flow: http.HTTPFlow) -> None:
        if self.who is not None:
            flow.metadata["gate_who"] = self.who
        if self.body is not None:
            flow.metadata["gate_body"] = self.body
        flow.metadata["gate_coding"] = self.coding
        if self.ws is not None:
            flow.metadata["gate_ws"] = self.ws


@dataclass(frozen=True, slots=True, kw_only=True)
class _Job:
    """A request as read off its flow on the loop: plain data a worker screens."""

    route: routing.Route
    headers: http.Headers  # a copy
    raw: bytes
    method: str
    user: str | None
    from_lock: bool
    notes: _Notes = field(default_factory=_Notes)
    ws: websocket.Connection | None = None  # a frame's connection (the frame is `raw`)
    is_text: bool = True  # a frame's kind


@dataclass(frozen=True, slots=True)
class _Ready:
    row: int  # its audit row, committed
    content: bytes | None  # the body to put on the flow (None: the one it has)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Screened:
    """A screened request between its first verdict and the one that is sent."""

    addon: GateAddon
    origin: pipeline.Origin
    req: Outbound
    verdict: Verdict
    job: _Job
    known: Callable[[str], Mapping[str, tuple[str, Mapping[str, Any]]]]  # calls made before

    def rescreen(self, approved: frozenset[str]) -> Verdict:
        a = self.addon
        return a.screener(replace(self.req, approved=approved), a.policies, a.screens, self.known)
