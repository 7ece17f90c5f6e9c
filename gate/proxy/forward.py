"""Forward (MITM) mode: sort each proxied request into model traffic, gate's own, or egress.

Model traffic gets its route here and is screened by the gate addon like reverse mode's.
Every other host follows `egress:`: tunnelled unread (and recorded, with its bytes) or
refused with a message saying why. A run started by `gate run --forward` names itself in
the proxy URL's user info (`http://run:ID@host:port`), so its project's rules apply.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from loguru import logger
from mitmproxy import connection, ctx, http, tcp

from gate import runs
from gate.agents import registry
from gate.audit import tunnels
from gate.audit.store import AuditStore
from gate.config import Config
from gate.lock import BRIDGE_SOURCE
from gate.proxy import routing, ws_control
from gate.proxy.intercept import Intercepts
from gate.proxy.routing import Route
from gate.rules.layers import PolicyStore
from gate.screen import relayed
from gate.screen.content import SecretScreen
from gate.screen.disclose import Scrub
from gate.screen.envelope import credential_headers, google_upstream
from gate.screen.request import Screens
from gate.screen.secrets import Scanner

RUN_USER = "run"  # the proxy URL's user name; its password is the run id
_RELAYED = "gate_relayed"  # a flow relayed unread: where it went, and its project
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class ForwardAddon:
    """Runs before the gate addon, which skips flows this one answered or relays."""

    def __init__(
        self,
        config: Config,
        data_dir: Path,
        audit: AuditStore,
        scrub: Callable[[], Scrub] | None = None,
        known: runs.Known | None = None,
        relay: relayed.RelayScreen | None = None,
    ):
        self.config = config
        self.data_dir = data_dir
        self.audit = audit
        # The gate addon's screens (denied values, secrets), for what this addon writes
        # down or logs: a host or path can carry a secret (`ghp_....example.com`).
        if scrub is None:
            plain = Scrub(SecretScreen(Scanner(), b""))
            scrub = lambda: plain  # noqa: E731
        self.scrub: Callable[[], Scrub] = scrub
        # The gate addon's rules and screens too, for what this addon relays unread: its
        # body, query and headers leave as they are, so what holds a finding is refused.
        self.relay = relay or relayed.RelayScreen(
            PolicyStore(), Screens(secrets=SecretScreen(Scanner(), b""))
        )
        self.intercepts = Intercepts(config.upstreams)
        self.port = 0
        self._runs: dict[str, runs.Run | None] = {}  # client connection id → its run
        self.known = known or runs.Known(data_dir)  # shared with the gate addon
        self._tunnel_rows: dict[str, int] = {}  # client connection id → audit row

    def running(self) -> None:
        self.port = ctx.master.addons.get("proxyserver").listen_addrs()[0][1]

    def client_disconnected(self, client: connection.Client) -> None:
        self._runs.pop(client.id, None)
        self._tunnel_rows.pop(client.id, None)

    # -- CONNECT -----------------------------------------------------------------------

    # Where a hook writes an audit row, the write runs on a thread: the audit's write lock
    # may be held by a large row being written, and the loop must keep relaying meanwhile.
    # The flow waits for its hook, so nothing else touches it in the meantime. What writes
    # nothing (a model host's CONNECT, a request routed to screening) is decided on the
    # loop: the hand-off to a thread costs more than deciding it.

    async def http_connect(self, flow: http.HTTPFlow) -> None:
        try:
            req = flow.request
            run = self._run_of(flow, req.headers.get("proxy-authorization"))
            if self.intercepts.decrypts(req.host.lower()):
                return  # TLS ends here; each request inside is screened
            await asyncio.to_thread(self._connect, flow, run)
        except Exception as exc:  # Fail closed: a tunnel gate could not decide is refused.
            logger.error("CONNECT refused: internal error {}", type(exc).__name__)
            flow.response = _refusal(
                502, f"gate could not decide on this connection ({type(exc).__name__})"
            )

    def _connect(self, flow: http.HTTPFlow, run: runs.Run | None) -> None:
        """On a thread: a CONNECT to a host gate does not decrypt, tunnelled or refused."""
        req = flow.request
        host, port = req.host.lower(), req.port
        agent = self._agent(run, req)
        if not self._allowed(flow, host):
            self._refuse(flow, req.host, port, agent, run)
            return
        if self.scrub().holds(req.host):
            # The name itself would leave (DNS, the TLS server name): refused unread.
            self._refuse(
                flow,
                req.host,
                port,
                agent,
                run,
                why="the host name holds a denied value or a likely secret",
            )
            return
        self._tunnel_rows[flow.client_conn.id] = self._opened(
            req.host, port, tunnels.Kind.TUNNEL, agent, run
        )

    # -- opaque tunnels ----------------------------------------------------------------

    def tcp_start(self, flow: tcp.TCPFlow) -> None:
        flow.metadata["gate_bytes"] = [0, 0]

    def tcp_message(self, flow: tcp.TCPFlow) -> None:
        counts = flow.metadata.setdefault("gate_bytes", [0, 0])
        message = flow.messages[-1]
        counts[0 if message.from_client else 1] += len(message.content)
        flow.messages.clear()  # counted, never kept: a tunnel's bytes are not gate's to read

    async def tcp_end(self, flow: tcp.TCPFlow) -> None:
        row = self._tunnel_rows.pop(flow.client_conn.id, None)
        counts = flow.metadata.get("gate_bytes", [0, 0])
        if row is not None:
            try:
                await asyncio.to_thread(tunnels.closed, self.audit, row, counts[0], counts[1])
            except Exception as exc:
                logger.error("tunnel {} not closed in the audit: {}", row, type(exc).__name__)

    tcp_error = tcp_end

    # -- requests ----------------------------------------------------------------------

    async def request(self, flow: http.HTTPFlow) -> None:
        try:
            unrouted = self._route(flow)
            if unrouted is not None:
                await asyncio.to_thread(self._unrouted, flow, unrouted)
        except Exception as exc:  # Fail closed: an unsorted request never leaves.
            logger.error("flow {} blocked: internal error {}", flow.id, type(exc).__name__)
            flow.response = _refusal(
                500, f"gate could not route this request ({type(exc).__name__}); it was not sent"
            )

    def _route(self, flow: http.HTTPFlow) -> _Unrouted | None:
        """On the loop: a request for gate, or for a model host (routed to screening), is
        settled here; anything else is returned, to be relayed or refused on a thread."""
        req = flow.request
        run = self._run_of(flow, req.headers.get("proxy-authorization"))
        req.headers.pop("proxy-authorization", None)  # meant for gate, never passed on
        if self._to_gate(flow):
            return None  # the gate addon serves it: health, control, /NAME/... routes
        host, agent = req.host.lower(), self._agent(run, req)
        try:  # a model host's path is routed as its provider will read it
            path = routing.normalise(req.path)
        except ValueError as exc:
            if self.intercepts.decrypts(host):
                # Fail closed: a model host's path with no single reading may be its model
                # endpoint read another way; relayed unread, it would leave unscreened.
                return _Unrouted(
                    run, agent, host, why=f"gate cannot read this path on a model host ({exc})"
                )
            path = req.path
        route = self.intercepts.route(req.host, req.port, path)
        if route is not None:
            flow.metadata["gate_route"] = Route(route.upstream, route.path, run.id if run else None)
            return None
        return _Unrouted(run, agent, host)

    def _unrouted(self, flow: http.HTTPFlow, u: _Unrouted) -> None:
        """On a thread: a request gate does not screen, relayed unread (and recorded) or
        refused."""
        req, run, agent, host = flow.request, u.run, u.agent, u.host
        if u.why is not None:
            self._refuse(flow, req.host, req.port, agent, run, _bare(req.path), why=u.why)
            return
        if _locked(flow) and not self.config.egress.listed(host):
            # Before any relay, the configured upstreams' origins included: a locked agent
            # reaches the model endpoints (screened) and egress.allow, nothing else.
            self._refuse(flow, req.host, req.port, agent, run, _bare(req.path))
            return
        scrub = self.scrub()
        if scrub.holds(req.host) or scrub.path(req.path) != req.path:
            self._refuse(
                flow,
                req.host,
                req.port,
                agent,
                run,
                _bare(req.path),
                why="its host or path holds a denied value or a likely secret",
            )
            return
        origin = self.intercepts.origin(host)
        if origin is None and not self._allowed(flow, host):
            self._refuse(flow, req.host, req.port, agent, run, _bare(req.path))
            return
        root = run.root if run else None
        if (why := self._held(flow, host, root)) is not None:
            self._refuse(flow, req.host, req.port, agent, run, _bare(req.path), why=why)
            return
        # Unread, like a tunnel: to the host, or to where the user sent it (`--upstream`).
        flow.metadata["gate_passthrough"] = self._opened(
            req.host,
            req.port,
            tunnels.Kind.HTTP,
            agent,
            run,
            reason=f"to upstream {origin.name}" if origin is not None else None,
        )
        # A WebSocket's messages are screened as they come, and a refused one recorded;
        # its control frames (a ping's payload) as a model WebSocket's are.
        flow.metadata[_RELAYED] = _Relayed(req.host, req.port, root)
        flow.metadata[ws_control.CHECK] = lambda payload: self.scrub().holds_bytes(payload)
        if origin is not None:
            req.scheme, req.host, req.port = origin.scheme, origin.host, origin.port
            req.headers["host"] = origin.url.split("://", 1)[1]

    def _held(self, flow: http.HTTPFlow, host: str, root: str | None) -> str | None:
        """Why a request relayed unread must not leave: what its body, query or headers
        hold, found by the screens model traffic gets (nothing can be withheld in place)."""
        req = flow.request
        if req.trailers:
            return (
                "the request carries HTTP trailers, which gate does not forward; send those"
                " fields as headers. It was not sent"
            )
        # Over TLS to a host gate decrypts, the host named is the one reached, and the
        # headers its model traffic reads as the caller's own credential pass here too.
        name = self.intercepts.name_of(host) if req.scheme == "https" else None
        return self.relay.refusal(
            relayed.Relayed(
                host=host,
                path=req.path,
                headers=list(req.headers.items(multi=True)),
                body=req.raw_content or b"",
                credentials=credential_headers(name, host) if name else frozenset(),
                google=name is not None and google_upstream(name, host),
                decrypted=name is not None,
            ),
            root,
        )

    async def websocket_message(self, flow: http.HTTPFlow) -> None:
        """A WebSocket relayed unread: each message from the agent screened as its body
        would be; one that holds a finding is dropped, and recorded as blocked."""
        relay: _Relayed | None = flow.metadata.get(_RELAYED)
        if flow.websocket is None or relay is None:
            return
        message = flow.websocket.messages[-1]
        if not message.from_client:
            return
        try:
            why = await asyncio.to_thread(self.relay.message_refusal, message.content, relay.root)
        except Exception as exc:  # Fail closed: a message gate could not screen never leaves.
            why = f"gate could not screen this WebSocket message ({type(exc).__name__})"
        if why is None:
            return
        # Dropped, the connection kept: mitmproxy cannot close it from here, and the
        # agent's next messages are screened the same way.
        message.drop()
        run = self._run_of(flow, None)
        logger.warning("flow {} WebSocket message blocked: {}", flow.id, self.scrub().text(why))
        try:
            await asyncio.to_thread(
                self._opened,
                relay.host,
                relay.port,
                tunnels.Kind.BLOCKED,
                self._agent(run, flow.request),
                run,
                why,
            )
        except Exception as exc:
            logger.error("blocked message not recorded in the audit: {}", type(exc).__name__)

    async def response(self, flow: http.HTTPFlow) -> None:
        row = flow.metadata.get("gate_passthrough")
        if row is None:
            return
        sent = len(flow.request.raw_content or b"")
        got = len(flow.response.raw_content or b"") if flow.response else 0
        try:
            await asyncio.to_thread(tunnels.closed, self.audit, row, sent, got)
        except Exception as exc:
            logger.error("request {} not closed in the audit: {}", row, type(exc).__name__)

    error = response

    # -- helpers -----------------------------------------------------------------------

    def _to_gate(self, flow: http.HTTPFlow) -> bool:
        """A request for gate itself, in origin form or naming gate's own address."""
        req = flow.request
        if flow.client_conn.tls_established or req.port != self.port:
            return False
        return req.host.lower().strip("[]") in (*_LOOPBACK, self.config.host)

    def _allowed(self, flow: http.HTTPFlow, host: str) -> bool:
        """Egress for a host gate does not screen. A locked agent (it comes through the
        lock's bridge) gets the allow list only: with tunnel-and-log gate would be its relay
        to anything, the host's own loopback services included."""
        if _locked(flow):
            return self.config.egress.listed(host)
        return self.config.egress.allows(host)

    def _refuse(
        self,
        flow: http.HTTPFlow,
        host: str,
        port: int,
        agent: str | None,
        run: runs.Run | None,
        path: str = "",
        why: str | None = None,
    ) -> None:
        """Refuse with a 403 saying why; logged and recorded with nothing the client sent
        in clear when it holds a finding (the agent gets its own words back)."""
        reason = why or "egress policy"
        if why is None:
            why = (
                "inside gate run --lock only model hosts and egress.allow are reachable"
                if _locked(flow)
                else f"gate's egress policy is block and {host.lower()} is not on egress.allow"
            )
            why += "; add it under `egress: allow:` in config.yaml to let it through"
        scrub = self.scrub()
        # The path (never its query) says which of a model host's other endpoints it was.
        logger.warning(
            "blocked a connection to {}:{}{}: {}",
            _stored_host(scrub, host),
            port,
            scrub.path(path),
            scrub.text(why),
        )
        flow.response = _refusal(
            403, f"gate blocked a connection to {host.lower()}:{port}{path}: {why}"
        )
        self._opened(host, port, tunnels.Kind.BLOCKED, agent, run, reason=reason)

    def _opened(
        self,
        host: str,
        port: int,
        kind: tunnels.Kind,
        agent: str | None,
        run: runs.Run | None,
        reason: str | None = None,
    ) -> int:
        """The audit row of a connection, its host and reason scrubbed."""
        scrub = self.scrub()
        return tunnels.opened(
            self.audit,
            tunnels.Opened(
                host=_stored_host(scrub, host),
                port=port,
                kind=kind,
                agent=agent,
                run_id=run.id if run else None,
                reason=scrub.text(reason) if reason is not None else None,
            ),
        )

    def _run_of(self, flow: http.HTTPFlow, auth: str | None) -> runs.Run | None:
        """The run this connection belongs to: named on its CONNECT or on the request."""
        key = flow.client_conn.id
        if auth is None:
            return self._runs.get(key)
        run_id = _run_id(auth)
        run = self.known.lookup(run_id) if run_id else None
        self._runs[key] = run
        return run

    def _agent(self, run: runs.Run | None, req: http.Request) -> str | None:
        return run.agent if run else registry.from_user_agent(req.headers.get("user-agent", ""))


@dataclass(frozen=True, slots=True)
class _Unrouted:
    """A request not for gate nor routed to screening, as the loop read it."""

    run: runs.Run | None
    agent: str | None
    host: str  # lower-cased
    why: str | None = None  # refused for this reason


@dataclass(frozen=True, slots=True)
class _Relayed:
    """A request relayed unread, as the agent named its destination."""

    host: str
    port: int
    root: str | None  # its run's project (None: screened against every known project)


def _stored_host(scrub: Scrub, host: str) -> str:
    """A host as logged and recorded: a finding in it (read as the client wrote it, case
    and all, since a token's checksum needs its case) replaced by its kind."""
    clean = scrub.text(host)
    return clean if clean != host else host.lower()


def _bare(path: str) -> str:
    return path.split("?", 1)[0]


def _locked(flow: http.HTTPFlow) -> bool:
    peer = flow.client_conn.peername[0] if flow.client_conn.peername else ""
    return peer == BRIDGE_SOURCE


def _run_id(auth: str) -> str | None:
    scheme, _, value = auth.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        user, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
    except (binascii.Error, UnicodeDecodeError):
        return None
    return password if user == RUN_USER else None


def _refusal(status: int, message: str) -> http.Response:
    return http.Response.make(
        status,
        (message + "\n").encode(),
        {"content-type": "text/plain; charset=utf-8", "x-gate-blocked": "1"},
    )
