"""Forward mode's certificate authority: made once in the data dir, and the trust bundle."""

from __future__ import annotations

import fcntl
import os
import ssl
from dataclasses import dataclass
from pathlib import Path

from gate import dirs

_BASENAME = "mitmproxy"  # the names mitmproxy loads its CA from, in its confdir
BUNDLE = "ca-bundle.pem"
LOCK = ".ca.lock"  # beside the CA's files: held while they are made


@dataclass(frozen=True, slots=True)
class Authority:
    key: Path  # private key and certificate: never leaves the data dir (0600)
    cert: Path  # the certificate alone, what clients trust
    bundle: Path  # the system's roots plus the certificate, for stores that replace roots


def paths(data_dir: Path) -> Authority:
    conf = data_dir / _BASENAME
    return Authority(
        conf / f"{_BASENAME}-ca.pem", conf / f"{_BASENAME}-ca-cert.pem", data_dir / BUNDLE
    )


def made(data_dir: Path) -> Authority:
    """The CA's files, made once, before mitmproxy loads them (every gate does, forward
    mode or not). Two gates starting at once on a new data dir (two `gate run`s) each wrote
    them: one could load the other's half-written key, or keep its key beside the other's
    certificate. The first makes them holding a lock; the other waits, then finds them."""
    from mitmproxy import certs  # here: `gate paths` names the files without loading it

    ca = paths(data_dir)
    conf = dirs.private_dir(ca.key.parent)
    fd = os.open(conf / LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when closed
        if not ca.key.exists():
            certs.CertStore.create_store(
                conf, _BASENAME, 2048, organization="gate", cn="gate local CA"
            )
    finally:
        os.close(fd)
    return ca


def ensure(data_dir: Path) -> Authority:
    """The CA, created on first use (key written owner-only), and a fresh bundle."""
    ca = made(data_dir)
    conf = ca.key.parent
    for item in conf.iterdir():  # mitmproxy writes the public copies world-readable
        if item.is_file():
            item.chmod(0o600)
    cert = ca.cert.read_bytes()
    roots = system_roots()
    text = roots.read_bytes() if roots is not None else b""
    if not text.endswith(b"\n") and text:
        text += b"\n"
    # Rewritten each time: the system's roots change with its updates.
    dirs.write_private(ca.bundle, text + cert)
    return ca


def system_roots() -> Path | None:
    """The file of trusted roots this system's OpenSSL reads, or certifi's copy."""
    found = ssl.get_default_verify_paths()
    for name in (found.cafile, found.openssl_cafile):
        if name and Path(name).is_file():
            return Path(name)
    try:
        import certifi
    except ImportError:
        return None
    return Path(certifi.where())
