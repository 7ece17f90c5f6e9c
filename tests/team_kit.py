"""A shared gate for tests: certificates made at run time, users, and clients that trust
the test CA (the real anthropic and openai SDKs over real TLS to 127.0.0.1)."""

from __future__ import annotations

import datetime as dt
import http.client
import ipaddress
import json
import ssl
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import anthropic
import httpx2 as httpx
import openai
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.config import AskConfig, Config, TlsSettings, parse_upstream
from gate.proxy.server import BackgroundGate, Listening
from gate.users import Issued, Users


@dataclass(frozen=True)
class Pki:
    """A CA, the gate's certificate for 127.0.0.1/localhost, and where they are."""

    dir: Path
    ca_key: ec.EllipticCurvePrivateKey
    ca_cert: x509.Certificate

    @property
    def ca_file(self) -> Path:
        return self.dir / "ca.pem"

    def ssl_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file))

    def issue(self, name: str, *, server: bool) -> tuple[Path, Path]:
        """A leaf certificate and key signed by this CA: for the gate (server) or a user."""
        key = ec.generate_private_key(ec.SECP256R1())
        now = dt.datetime.now(dt.UTC)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)]))
            .issuer_name(self.ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), True)
        )
        if server:
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
                ),
                False,
            ).add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)
        else:
            builder = builder.add_extension(
                x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), False
            )
        cert = builder.sign(self.ca_key, hashes.SHA256())
        return _write(self.dir, name, cert, key)


def make_pki(where: Path, name: str = "test CA") -> Pki:
    where.mkdir(parents=True, exist_ok=True)
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .add_extension(
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
            True,
        )
        .sign(key, hashes.SHA256())
    )
    (where / "ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return Pki(where, key, cert)


def _write(
    where: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> tuple[Path, Path]:
    cert_path, key_path = where / f"{name}.crt", where / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)
    return cert_path, key_path


@dataclass
class SharedGate:
    listening: Listening
    data: Path
    provider: FakeProvider
    pki: Pki
    users: dict[str, Issued]

    @property
    def base(self) -> str:
        return self.listening.base_url

    def http(self, **kwargs: Any) -> httpx.Client:
        return httpx.Client(verify=self.pki.ssl_context(), **kwargs)

    def anthropic(self, user: str | None = None, **kwargs: Any) -> anthropic.Anthropic:
        """The Anthropic SDK with the user's agent token in its base URL."""
        prefix = f"/_user/{self.users[user].agent_token}" if user else ""
        return closed_after_test(
            anthropic.Anthropic(
                base_url=f"{self.base}{prefix}/anthropic",
                api_key="sk-ant-test-x",
                max_retries=0,
                timeout=60,
                http_client=self.http(),
                **kwargs,
            )
        )

    def openai(self, user: str) -> openai.OpenAI:
        """The OpenAI SDK with the user's agent token in a header."""
        return closed_after_test(
            openai.OpenAI(
                base_url=f"{self.base}/openai/v1",
                api_key="sk-test-x",
                max_retries=0,
                http_client=self.http(),
                default_headers={"x-gate-user-token": self.users[user].agent_token},
            )
        )

    def raw(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        tls: bool = True,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """One request as written, over TLS (or not): (status, parsed JSON or text)."""
        host, port = self.listening.host, self.listening.port
        conn = (
            http.client.HTTPSConnection(host, port, context=self.pki.ssl_context(), timeout=30)
            if tls
            else http.client.HTTPConnection(host, port, timeout=30)
        )
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        conn.request(
            method, path, body=data, headers={"content-type": "application/json", **(headers or {})}
        )
        resp = conn.getresponse()
        raw = resp.read()
        conn.close()
        try:
            return resp.status, json.loads(raw)
        except ValueError:
            return resp.status, raw.decode()


def start_shared(
    provider: FakeProvider,
    data: Path,
    pki_dir: Path,
    *,
    users: tuple[tuple[str, bool], ...] = (("alice", False), ("bob", False), ("root", True)),
    ask: AskConfig | None = None,
    projects: tuple[str, ...] = (),
    client_ca: bool = False,
    advertise: bool = False,
) -> tuple[BackgroundGate, SharedGate]:
    """A gate with `shared: true` on 127.0.0.1 (the path a gate on 0.0.0.0 takes, reached
    only over loopback), its certificate from a fresh test CA, and these users."""
    pki = make_pki(pki_dir)
    cert, key = pki.issue("gate", server=True)
    store = Users(data)
    issued = {name: store.add(name, admin) for name, admin in users}
    config = replace(
        Config(),
        port=0,
        shared=True,
        projects=projects,
        ask=ask or AskConfig(mode="never"),
        tls=TlsSettings(str(cert), str(key), str(pki.ca_file) if client_ca else None),
    ).with_upstreams({name: parse_upstream(name, provider.url) for name in ("anthropic", "openai")})
    server = BackgroundGate(config, data, advertise=advertise)
    return server, SharedGate(server.start(), data, provider, pki, issued)
