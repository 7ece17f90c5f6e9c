"""The TLS a gate's listener speaks when `tls:` is set: its own certificate and key, and
with `tls.client_ca` the client certificates that sign a user in (mutual TLS)."""

from __future__ import annotations

from typing import Any

from mitmproxy import tls
from mitmproxy.addons.tlsconfig import AppData, alpn_select_callback
from OpenSSL import SSL

from gate.config import TlsSettings
from gate.errors import ConfigError


def server_context(settings: TlsSettings) -> SSL.Context:
    """An OpenSSL server context for the listener; ConfigError names the file at fault."""
    assert settings.cert is not None and settings.key is not None
    context = SSL.Context(SSL.TLS_SERVER_METHOD)
    context.set_min_proto_version(SSL.TLS1_2_VERSION)
    context.set_options(SSL.OP_NO_COMPRESSION)
    # Session resumption with client certificates needs a context id.
    context.set_session_id(b"gate")
    _load(
        context.use_certificate_chain_file,
        settings.cert,
        "tls.cert",
        "a PEM certificate chain, the server's certificate first",
    )
    try:
        context.use_privatekey_file(settings.key)
        context.check_privatekey()
    except SSL.Error as exc:
        if "mismatch" in str(exc) or "check_private_key" in str(exc):
            raise ConfigError(
                "tls.key is not the key of tls.cert",
                where=settings.key,
                hint="give the private key the certificate was issued for",
            ) from exc
        _load(
            context.use_privatekey_file, settings.key, "tls.key", "an unencrypted PEM private key"
        )
        raise
    if settings.client_ca is not None:
        _load(
            context.load_verify_locations,
            settings.client_ca,
            "tls.client_ca",
            "the PEM certificate of the CA that issues client certificates",
        )
        # A certificate is asked for, not required (a user may sign in with a token
        # instead); one that is sent must chain to the CA, or the handshake fails.
        context.set_verify(SSL.VERIFY_PEER, _verified)
    context.set_alpn_select_callback(alpn_select_callback)
    return context


def _load(method: Any, path: str, key: str, what: str) -> None:
    try:
        method(path)
    except (SSL.Error, OSError) as exc:
        raise ConfigError(
            f"{key} cannot be loaded: it must be {what}",
            where=path,
            hint="check the path and the file's contents",
        ) from exc


def _verified(conn: SSL.Connection, cert: Any, errno: int, depth: int, ok: int) -> bool:
    return bool(ok)


class ListenerTls:
    """Serves the context above to every client that starts TLS (in place of the
    certificate mitmproxy would make from its own CA for the host a client names)."""

    def __init__(self, context: SSL.Context):
        self.context = context

    def tls_start_client(self, tls_start: tls.TlsData) -> None:
        conn = SSL.Connection(self.context)
        # HTTP/1.1 only: WebSocket upgrades (Codex) do not run over HTTP/2 here.
        conn.set_app_data(AppData(client_alpn=None, server_alpn=None, http2=False))
        conn.set_accept_state()
        tls_start.ssl_conn = conn
