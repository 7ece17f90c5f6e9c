"""server.json: where this data dir's long-lived gate (`gate serve`) listens, for `gate env`,
`gate run` and `gate doctor`, which must not pay for importing the proxy engine to read it."""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from gate import dirs
from gate.config import base_url

SERVER_FILE = "server.json"


@dataclass(frozen=True, slots=True)
class Listening:
    host: str
    port: int
    tls: bool = False
    cert: str | None = None  # with TLS: the certificate chain it serves (pinned by clients)

    @property
    def base_url(self) -> str:
        url = base_url(self.host, self.port)
        return "https" + url[len("http") :] if self.tls else url


def write_server_file(data_dir: Path, listening: Listening, instance: str = "") -> None:
    # `instance` is what the gate's /_gate/health names: the gate found at host:port is
    # this data dir's gate only if the two agree.
    info = {
        "schemaVersion": 1,
        "pid": os.getpid(),
        "host": listening.host,
        "port": listening.port,
        "started": time.time(),
        "instance": instance,
    }
    if listening.tls:  # `gate env` and `gate run` must speak TLS to it, and pin its certificate
        info["tls"] = True
        if listening.cert:
            info["tls_cert"] = str(Path(listening.cert).resolve())
    dirs.write_private(data_dir / SERVER_FILE, json.dumps(info).encode())


def clear_server_file(data_dir: Path) -> None:
    path = data_dir / SERVER_FILE
    try:
        if json.loads(path.read_text())["pid"] == os.getpid():
            path.unlink()
    except (OSError, ValueError, KeyError):
        pass


def server_instance(data_dir: Path) -> str | None:
    """The instance id server.json names (None: no file, or one without it)."""
    try:
        value = json.loads((data_dir / SERVER_FILE).read_text()).get("instance")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) and value else None


def read_server_file(data_dir: Path) -> Listening | None:
    try:
        info = json.loads((data_dir / SERVER_FILE).read_text())
        cert = info.get("tls_cert")
        return Listening(
            str(info["host"]),
            int(info["port"]),
            info.get("tls") is True,
            cert if isinstance(cert, str) else None,
        )
    except (OSError, ValueError, KeyError, TypeError):
        return None
