"""A fake of Google's sign-in endpoints, behind an HTTPS proxy on loopback.

Gemini CLI signed in with Google checks its cached access token at
https://oauth2.googleapis.com/tokeninfo on every start, through HTTPS_PROXY, before it sends
anything to Code Assist (a token that cannot be checked sends it to an interactive login);
it refreshes an expired token at …/token and may look the account up at
www.googleapis.com. Those calls never go to CODE_ASSIST_ENDPOINT, so gate cannot carry
them. This proxy answers them from loopback: CONNECT to a host in `HOSTS` is terminated
with a certificate from a CA made at run time (the agent trusts it through
NODE_EXTRA_CA_CERTS); anything else is recorded and dropped, as agent_clis.BlackHole does.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import socketserver
import ssl
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from loopback import LoopbackServer

EMAIL = "gate-test@example.com"
SCOPES = (
    "https://www.googleapis.com/auth/cloud-platform "
    "https://www.googleapis.com/auth/userinfo.email "
    "https://www.googleapis.com/auth/userinfo.profile"
)
HOSTS = ("oauth2.googleapis.com", "www.googleapis.com")


def answers(refreshed: str) -> dict[str, dict[str, Any]]:
    """What each sign-in path answers ("host/path" → JSON). tokeninfo: google-auth-library's
    OAuth2Client.getTokenInfo reads expires_in and scope; token: a refresh, which hands out
    `refreshed`; userinfo: the CLI caches the email when google_accounts.json names no
    active account."""
    sub = "100000000000000000001"
    return {
        "oauth2.googleapis.com/tokeninfo": {
            "azp": "fake.apps.googleusercontent.com",
            "aud": "fake.apps.googleusercontent.com",
            "sub": sub,
            "scope": SCOPES,
            "expires_in": 3599,
            "email": EMAIL,
            "email_verified": "true",
            "access_type": "offline",
        },
        "oauth2.googleapis.com/token": {
            "access_token": refreshed,
            "expires_in": 3599,
            "scope": SCOPES,
            "token_type": "Bearer",
        },
        "www.googleapis.com/oauth2/v2/userinfo": {
            "id": sub,
            "email": EMAIL,
            "verified_email": True,
        },
    }


def _name(common: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])


def _cert(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer: str,
    issuer_key: ec.EllipticCurvePrivateKey,
    ca: bool,
) -> x509.Certificate:
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(hours=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if ca:
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
    else:
        builder = builder.add_extension(
            x509.SubjectAlternativeName([x509.DNSName(h) for h in HOSTS]), critical=False
        )
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(obj: x509.Certificate | ec.EllipticCurvePrivateKey) -> bytes:
    if isinstance(obj, x509.Certificate):
        return obj.public_bytes(serialization.Encoding.PEM)
    return obj.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def tls_context(folder: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context for HOSTS and the CA file that makes clients trust it."""
    ca_key, leaf_key = (
        ec.generate_private_key(ec.SECP256R1()),
        ec.generate_private_key(ec.SECP256R1()),
    )
    ca = _cert("gate test CA", ca_key, "gate test CA", ca_key, ca=True)
    leaf = _cert("oauth2.googleapis.com", leaf_key, "gate test CA", ca_key, ca=False)
    ca_file, chain, key = folder / "ca.pem", folder / "leaf.pem", folder / "leaf-key.pem"
    ca_file.write_bytes(_pem(ca))
    chain.write_bytes(_pem(leaf) + _pem(ca))
    key.write_bytes(_pem(leaf_key))
    key.chmod(0o600)
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ctx.load_cert_chain(chain, key)
    return ctx, ca_file


class GoogleSignIn(LoopbackServer):
    """An HTTPS proxy: answers the sign-in paths, drops everything else (all of it when
    `down`, as when Google cannot be reached).

    `.answered` lists the requests it answered ("METHOD host/path"), `.tried` what it
    dropped (the request line or "METHOD host/path"), `.bodies` the raw bytes of every
    request it read; a refresh hands out `.refreshed`."""

    def __init__(self, folder: Path, down: bool = False) -> None:
        self.ctx, self.ca_file = tls_context(folder)
        self.refreshed = "ya29.fake-refreshed-" + os.urandom(12).hex()
        self.answers = answers(self.refreshed)
        self.down = down
        self.answered: list[str] = []
        self.tried: list[str] = []
        self.bodies: list[bytes] = []
        self.lock = threading.Lock()
        self.serve(self._handler(), socketserver.ThreadingTCPServer)

    def _handler(self) -> type[socketserver.StreamRequestHandler]:
        fake = self

        class Connect(socketserver.StreamRequestHandler):
            def handle(self) -> None:
                with contextlib.suppress(OSError):  # ssl.SSLError is one too
                    head = self.rfile.readline(4096).decode("latin-1").strip()
                    while self.rfile.readline(4096).strip():
                        pass
                    verb, _, target = head.partition(" ")
                    host = target.split(" ")[0].rsplit(":", 1)[0]
                    if verb != "CONNECT" or host not in HOSTS or fake.down:
                        with fake.lock:
                            fake.tried.append(head)
                        return
                    self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    self.wfile.flush()
                    with fake.ctx.wrap_socket(self.request, server_side=True) as tls:
                        fake._answer(tls, host)

        return Connect

    def _answer(self, tls: ssl.SSLSocket, host: str) -> None:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                where = host + self.path.split("?", 1)[0]
                answer = fake.answers.get(where)
                with fake.lock:
                    fake.bodies.append(self.path.encode() + b"\n" + body)
                    (fake.answered if answer else fake.tried).append(f"{self.command} {where}")
                data = json.dumps(answer or {"error": "not_found"}).encode()
                self.send_response(200 if answer else 404)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_POST = do_GET

        Handler(tls, ("127.0.0.1", 0), self.server)
