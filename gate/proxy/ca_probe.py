"""Does a client trust gate's CA? A loopback TLS server with a leaf the CA signed, to try."""

from __future__ import annotations

import shutil
import socket
import ssl
import tempfile
import threading
from pathlib import Path
from types import TracebackType

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from mitmproxy import certs

from gate.proxy import ca


class LeafServer:
    """`with LeafServer(data, host) as s:` a TLS listener on 127.0.0.1:`s.port` whose
    certificate for `host` is signed by the data dir's CA (as forward mode's are)."""

    def __init__(self, data_dir: Path, host: str):
        authority = ca.paths(data_dir)
        store = certs.CertStore.from_store(authority.key.parent, "mitmproxy", 2048)
        entry = store.get_cert(host, [x509.DNSName(host)])
        self._tmp = Path(tempfile.mkdtemp(prefix="gate-ca-probe-"))
        leaf, key = self._tmp / "leaf.pem", self._tmp / "leaf-key.pem"
        leaf.write_bytes(entry.cert.to_pem())
        key.touch(mode=0o600)
        key.write_bytes(
            entry.privatekey.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        self._ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self._ctx.load_cert_chain(leaf, key)
        shutil.rmtree(self._tmp)  # loaded: the leaf's key is not left on disk
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._sock.getsockname()[1])
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> LeafServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._sock.close()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return  # closed
            try:
                conn.settimeout(10)
                with self._ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.sendall(b"ok")
                    tls.recv(16)  # until the client hangs up: closing first resets it
            except (OSError, ssl.SSLError):
                conn.close()  # the client refused our certificate: that is its answer
