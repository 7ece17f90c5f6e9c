"""Talk to a running gate's control API: list pending questions, answer them.

Every gate serving a data dir (a `gate serve`, or one a `gate run` started) leaves a small
file in `<data>/control/` saying where it listens (and, for a shared gate, which
certificate it serves over TLS); all of them share the data dir's token
(`<data>/control.token`, 0600), sent as `Authorization: Bearer <token>`. A shared gate on
another machine is named by GATE_URL, with the person's token in the file GATE_TOKEN_FILE
and, for a certificate no system root signs, its CA in GATE_CA.
"""

from __future__ import annotations

import http.client
import json
import os
import secrets
import ssl
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

from gate import dirs
from gate.ask.questions import DEFAULT_SCOPE
from gate.config import base_url
from gate.errors import GateError, Unreachable
from gate.lock import LOCKED_MARK

TOKEN_FILE = "control.token"  # noqa: S105 (a file name, not a password)
GATES_DIR = "control"


def load_or_create_token(data_dir: Path) -> str:
    """The data dir's control token, created once (0600)."""
    path = data_dir / TOKEN_FILE
    try:
        token = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        token = ""
    if len(token) < 32:
        token = secrets.token_urlsafe(32)
        dirs.write_private(path, token.encode())
    return token


def register(data_dir: Path, host: str, port: int, tls_cert: Path | None = None) -> Path:
    """Say where this gate listens (with TLS: the certificate chain it serves), for `gate
    pending` and friends; removed on stop."""
    path = dirs.private_dir(data_dir / GATES_DIR) / f"{os.getpid()}-{port}.json"
    info: dict[str, Any] = {"schemaVersion": 1, "pid": os.getpid(), "host": host, "port": port}
    if tls_cert is not None:
        info["tls_cert"] = str(tls_cert)
    dirs.write_private(path, json.dumps(info).encode())
    return path


def pinned_context(cert: Path) -> ssl.SSLContext:
    """TLS to this machine's own gate: the certificate its config names is the trust anchor
    (it may name another host than the loopback address it is reached on)."""
    context = ssl.create_default_context(cafile=str(cert))
    context.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN  # the leaf itself is trusted
    context.check_hostname = False  # its own certificate, on loopback: pinned instead
    return context


def fetch_health(base_url: str, cert: str | None = None, timeout: float = 1.0) -> Any:
    """What the gate at base_url says of itself on /_gate/health (with TLS, checked against
    the certificate it serves, when known). Raises OSError or ValueError when none answers."""
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if cert and base_url.startswith("https:"):
        handlers.append(urllib.request.HTTPSHandler(context=pinned_context(Path(cert))))
    # Never through a proxy from the environment: the gate is on loopback.
    opener = urllib.request.build_opener(*handlers)
    with opener.open(f"{base_url}/_gate/health", timeout=timeout) as resp:
        return json.loads(resp.read())


def _gates(data_dir: Path) -> tuple[list[str], dict[str, Path]]:
    """Base URLs of the gates that said they serve this data dir and whose process lives,
    and for those that speak TLS, the certificate each serves."""
    out, certs = [], {}
    for path in sorted((data_dir / GATES_DIR).glob("*.json")):
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            os.kill(int(info["pid"]), 0)
        except ProcessLookupError:
            path.unlink(missing_ok=True)  # left behind by a gate that was killed
            continue
        except (OSError, ValueError, KeyError, TypeError):
            continue
        host = "127.0.0.1" if info["host"] in ("0.0.0.0", "::", "") else str(info["host"])  # noqa: S104
        base = base_url(host, int(info["port"]))
        if isinstance(info.get("tls_cert"), str):
            base = "https" + base.removeprefix("http")
            certs[base] = Path(info["tls_cert"])
        out.append(base)
    return out, certs


@dataclass
class ControlClient:
    """The control API of every gate serving one data dir."""

    bases: list[str]
    token: str
    # Per https base: this machine's gate's own certificate, which its answer must show
    # (pinned), or None for a remote gate checked against `ca` (or the system's roots).
    pinned: dict[str, Path] = field(default_factory=dict)
    ca: Path | None = None

    @classmethod
    def find(cls, data_dir: Path) -> ControlClient:
        if (data_dir / LOCKED_MARK).exists():
            # Only a person answers gate's questions; a locked agent sees no token or gate.
            raise GateError(
                "cannot reach the gate from inside `gate run --lock`: only the"
                " person outside the lock answers its questions",
                hint="answer in another terminal (`gate pending`, `gate approve"
                " ID`) or on the approval page",
            )
        if os.environ.get("GATE_URL"):
            return cls.remote(os.environ["GATE_URL"])
        bases, pinned = _gates(data_dir)
        token_path = data_dir / TOKEN_FILE
        if not bases or not token_path.exists():
            raise Unreachable(
                f"no gate is running for data dir {data_dir}",
                hint="start one with `gate serve` (or `gate run -- AGENT`), or set"
                " GATE_DATA_DIR to the data dir of the gate you mean",
            )
        return cls(bases, token_path.read_text(encoding="ascii").strip(), pinned)

    @classmethod
    def remote(cls, url: str) -> ControlClient:
        """A shared gate elsewhere (GATE_URL), signed in with a person's token read from
        GATE_TOKEN_FILE (never from the environment itself, which agents read)."""
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise GateError(
                f"GATE_URL must be a shared gate's https:// address, not {url!r}",
                hint="a shared gate speaks TLS only (docs/team.md)",
            )
        where = os.environ.get("GATE_TOKEN_FILE", "")
        try:
            token = Path(where).read_text(encoding="ascii").strip() if where else ""
        except OSError as exc:
            raise Unreachable(f"cannot read GATE_TOKEN_FILE: {exc}", where=where) from exc
        if not token:
            raise GateError(
                "GATE_URL names a shared gate: put your person token (gp_...) in a file"
                " of your own (0600) and name it in GATE_TOKEN_FILE",
                hint="`gate users add NAME` on the gate's machine prints it",
            )
        ca = os.environ.get("GATE_CA")
        return cls([url.rstrip("/")], token, {}, Path(ca) if ca else None)

    def pending(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for base in self._live():
            out += self._call(base, "GET", "/_gate/api/pending")[1].get("pending", [])
        return sorted(out, key=lambda q: q.get("created", 0))

    def rules(self, root: str) -> list[dict[str, Any]]:
        """What each running gate enforces for project `root` (its rule files' warnings)."""
        out = []
        for base in self._live():
            status, reply = self._call(base, "GET", f"/_gate/api/rules?project={quote(root)}")
            if status == 200:
                out.append({"gate": base, **reply})
        return out

    def answer(self, qid: str, answer: str, remember: str = DEFAULT_SCOPE) -> dict[str, Any]:
        """Answer question `qid` on whichever gate holds it; GateError if none does."""
        body = {"answer": answer, "remember": remember}
        last: tuple[int, dict[str, Any]] = (404, {})
        for base in self._live():
            last = self._call(base, "POST", f"/_gate/api/pending/{qid}", body)
            if last[0] != 404:
                break
        status, reply = last
        if status != 200:
            raise GateError(
                f"cannot answer {qid}: {reply.get('error', f'HTTP {status}')}",
                hint="`gate pending` lists the open questions",
            )
        return reply

    def _live(self) -> list[str]:
        """The gates that answer; one that went away (its pid reused) is skipped, unless
        none is left, which is an error."""
        live, error = [], None
        for base in self.bases:
            try:
                self._call(base, "GET", "/_gate/health", auth=False)
            except GateError as exc:
                error = error or exc
            else:
                live.append(base)
        if not live and error is not None:
            raise error
        return live

    @property
    def page_url(self) -> str:
        return f"{self._live()[0]}/_gate/ui?token={self.token}"

    @property
    def console_url(self) -> str:
        return f"{self._live()[0]}/_gate/console?token={self.token}"

    def _call(
        self,
        base: str,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        auth: bool = True,
    ) -> tuple[int, dict[str, Any]]:
        headers = {"content-type": "application/json"}
        if auth:
            headers["authorization"] = f"Bearer {self.token}"
        parts = urlsplit(base)
        try:
            # http.client: never through a proxy from the environment.
            if parts.scheme == "https":
                conn: http.client.HTTPConnection = http.client.HTTPSConnection(
                    parts.hostname or "", parts.port or 443, timeout=10, context=self._tls(base)
                )
            else:
                conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
            try:
                conn.connect()
                self._check_pin(base, conn)  # before the token is sent
                conn.request(
                    method,
                    parts.path + path,
                    body=None if body is None else json.dumps(body).encode(),
                    headers=headers,
                )
                resp = conn.getresponse()
                raw = resp.read()
            finally:
                conn.close()
        except (OSError, ssl.SSLError, http.client.HTTPException) as exc:
            raise Unreachable(
                f"the gate at {base} did not answer ({exc})",
                hint="is it still running? `gate paths` shows the data dir",
            ) from exc
        try:
            reply = json.loads(raw)
        except ValueError:
            reply = {}
        return resp.status, reply if isinstance(reply, dict) else {}

    def _tls(self, base: str) -> ssl.SSLContext:
        """The TLS check for base: this machine's gate answers with the very certificate
        its config names (pinned below; it may name another host than 127.0.0.1), a
        remote gate with one that GATE_CA (or a system root) signs for its name."""
        cert = self.pinned.get(base)
        if cert is None:
            return ssl.create_default_context(cafile=str(self.ca) if self.ca else None)
        return pinned_context(cert)

    def _check_pin(self, base: str, conn: http.client.HTTPConnection) -> None:
        cert = self.pinned.get(base)
        if cert is None or conn.sock is None:
            return
        pem = cert.read_text(encoding="ascii")
        end = "-----END CERTIFICATE-----"
        leaf = ssl.PEM_cert_to_DER_cert(pem[: pem.index(end) + len(end)] if end in pem else pem)
        sock = conn.sock
        if not isinstance(sock, ssl.SSLSocket) or sock.getpeercert(binary_form=True) != leaf:
            raise ssl.SSLError(f"the gate at {base} did not show its certificate {cert}")
