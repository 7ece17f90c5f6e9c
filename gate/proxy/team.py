"""A gate that serves others: it listens only with TLS and lets in only its users.

A gate on another address than loopback (or with `shared: true`) takes other machines'
requests, so it refuses to start without TLS and at least one user (`gate users add`).
Then every request must come over TLS and carry a user's agent token, in the
`x-gate-user-token` header or as the base URL's first segments `/_user/TOKEN/...`, or
come with a client certificate whose CN is a user's name (tls.client_ca). The token is
taken off the request before anything else reads it: it is never forwarded, recorded or
logged. The control API and the approval page take a person's token (proxy/control.py).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import unquote

from loguru import logger
from mitmproxy import http

from gate.config import Config
from gate.errors import ConfigError, GateError
from gate.proxy import replies, routing
from gate.users import Kind, Users

HEADER = "x-gate-user-token"
PREFIX = "/_user/"
_CONTROL = "/_gate/"
_HEALTH = "/_gate/health"
_RUN = "/_run/"


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or `localhost`; a name that only resolves there today is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def is_shared(config: Config) -> bool:
    return config.shared or not is_loopback(config.host)


def check_listen(config: Config, users: Users) -> None:
    """Fail closed: a shared gate starts only with TLS, reverse mode and a user."""
    if config.tls.on and config.forward:
        # The listener's certificate would stand in for every host a tunnel names.
        raise ConfigError(
            "tls: serves the listener's own HTTPS, which forward mode (--forward) does not use",
            where="tls",
            hint="leave tls: out for forward mode (docs/forward.md)",
        )
    if not is_shared(config):
        return
    why = f"listening on {config.host!r}" if not is_loopback(config.host) else "shared: true"
    missing = []
    if not config.tls.on:
        missing.append("TLS: tls.cert and tls.key in config.yaml, or --tls-cert and --tls-key")
    try:
        active = users.active()
    except GateError as exc:  # an unreadable users file lets nobody in: say so now
        missing.append(f"a readable users file ({exc.where}: {exc.message})")
    else:
        if not active:
            missing.append(
                "client authentication: at least one user (`gate users add"
                " NAME`; with tls.client_ca, a client certificate's CN names one)"
            )
    if config.forward:
        missing.append("reverse mode: forward mode (--forward) serves this machine only")
    if missing:
        raise ConfigError(
            f"a gate that serves other machines ({why}) needs " + "; and ".join(missing),
            where="host" if not is_loopback(config.host) else "shared",
            hint="see docs/team.md; or listen on 127.0.0.1 and share the audit instead (audit.url)",
        )


class Refused(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


class TeamAuth:
    """Runs before the gate addon: takes the user's token off every request and, on a
    shared gate, refuses a request that is not over TLS or names no active user. The
    user's name goes to flow.metadata["gate_user"] for the audit and the questions."""

    def __init__(self, config: Config, users: Users):
        self.shared = is_shared(config)
        self.tls = config.tls.on
        self.client_certs = config.tls.client_ca is not None
        self.users = users

    def request(self, flow: http.HTTPFlow) -> None:
        try:
            user = self._authenticate(flow)
        except Refused as exc:
            self._refuse(flow, exc.status, str(exc))
        except Exception as exc:  # fail closed: an unchecked request never goes on
            logger.error("flow {} refused: user check failed ({})", flow.id, type(exc).__name__)
            self._refuse(
                flow,
                500,
                "gate could not check who sent this request; it was not sent. See gate's log.",
            )
        else:
            if user is not None:
                flow.metadata["gate_user"] = user

    def _authenticate(self, flow: http.HTTPFlow) -> str | None:
        req = flow.request
        # Taken off first, in every mode, so no later step (routing, a block reason, the
        # audit, the upstream) ever sees a token.
        headed = {v.strip() for v in req.headers.get_all(HEADER)}
        req.headers.pop(HEADER, None)
        in_path = self._strip_prefix(req)
        if not self.shared:
            return None
        # Decided on the path as the gate addon will route it: the raw `/_gate/../NAME/...`
        # or `/%5Fgate/...` would otherwise pass as gate's own and be routed as a provider's.
        try:
            path = routing.normalise(req.path).split("?", 1)[0]
        except ValueError as exc:
            raise Refused(400, f"gate cannot read this request's path: {exc}") from exc
        if path == _HEALTH:
            return None  # names no user and no path; health checks speak plain HTTP
        if self.tls and not flow.client_conn.tls_established:
            raise Refused(
                403,
                "this gate is shared and takes HTTPS only: use an https://"
                " base URL (the request was not read further)",
            )
        if path.startswith(_CONTROL):
            if in_path is not None:
                raise Refused(
                    400, "the /_user/ prefix goes before a provider's route, not before /_gate/"
                )
            return None  # the control API and the page take a person's token themselves
        if path.startswith(_RUN):
            # A run is a `gate run` on this machine; naming one would take its project and
            # agent as this request's own.
            raise Refused(400, "a shared gate has no runs: drop /_run/ID/ from the base URL")
        return self._user(flow, headed, in_path)

    def _strip_prefix(self, req: http.Request) -> str | None:
        """The token of a `/_user/TOKEN/...` path, which is replaced by the rest. The path
        is normalised first, so `%5Fuser`, `//_user` or `/x/../_user` are the prefix too."""
        try:
            target = routing.normalise(req.path)
        except ValueError as exc:
            if "_user/" in unquote(req.path).lower():
                raise Refused(400, f"gate cannot read this request's path: {exc}") from exc
            return None  # not ours: the gate addon refuses it and says why
        path, sep, query = target.partition("?")
        if not path.startswith(PREFIX):
            return None
        token, _, rest = path[len(PREFIX) :].partition("/")
        rest = "/" + rest
        if rest.startswith(PREFIX) or rest.rstrip("/") == PREFIX.rstrip("/"):
            raise Refused(400, "the /_user/TOKEN/ prefix appears twice in the path; give it once")
        req.path = rest + sep + query
        return token

    def _user(self, flow: http.HTTPFlow, headed: set[str], in_path: str | None) -> str:
        tokens = headed | ({in_path} if in_path is not None else set())
        if len(tokens) > 1:
            raise Refused(
                400,
                "the request carries two different user tokens (header"
                f" {HEADER} and the /_user/ path, or the header twice); send one",
            )
        certified = self._certified(flow)
        if not tokens:
            if certified is not None:
                return certified
            raise Refused(
                401,
                "this gate is shared: send your agent token (gu_...) in the"
                f" {HEADER} header or the base URL (https://HOST:PORT/_user/TOKEN"
                "/NAME); `gate users add` issues one",
            )
        token = tokens.pop()
        user = self.users.by_token(token, Kind.AGENT)
        if user is None:
            if self.users.by_token(token, Kind.PERSON) is not None:
                raise Refused(
                    401,
                    "that is a person token (gp_...), which signs in to the"
                    " approval page; agents send the agent token (gu_...)",
                )
            raise Refused(
                401,
                "unknown or revoked user token; ask the gate's admin for a"
                " new one (`gate users add`)",
            )
        if certified is not None and certified != user.name:
            raise Refused(
                400,
                "the client certificate and the user token name different users; send one of them",
            )
        return user.name

    def _certified(self, flow: http.HTTPFlow) -> str | None:
        """The active user a verified client certificate names (its CN)."""
        if not self.client_certs or not flow.client_conn.certificate_list:
            return None
        name = flow.client_conn.certificate_list[0].cn or ""
        user = self.users.by_name(name)
        if user is None:
            raise Refused(
                401,
                "the client certificate's CN names no active user of this gate (`gate users list`)",
            )
        return user.name

    def _refuse(self, flow: http.HTTPFlow, status: int, message: str) -> None:
        peer = flow.client_conn.peername[0] if flow.client_conn.peername else "?"
        # The path and headers are not logged: a refused request may hold a token.
        logger.warning("flow {} from {} refused ({}): {}", flow.id, peer, status, message)
        path = flow.request.path
        flow.response = http.Response.make(
            status,
            replies.error(
                "",
                path if PREFIX not in path else "/",
                status,
                f"gate refused this request: {message}",
            ),
            {"content-type": "application/json", "x-gate-blocked": "1"},
        )
