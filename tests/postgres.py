"""A real PostgreSQL server on 127.0.0.1 for the tests: initdb and pg_ctl in a temporary
directory (as the `postgres` user when the tests run as root), one fresh database per test."""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest


def _bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


@dataclass(frozen=True)
class Server:
    port: int
    user: str
    data: Path

    def url(self, db: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{db}"

    def new_database(self) -> str:
        name = "t_" + secrets.token_hex(6)
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {name}")
        return self.url(name)


def _as_owner(argv: list[str]) -> list[str]:
    """The server refuses to run as root: run it as `postgres` then."""
    return ["runuser", "-u", "postgres", "--", *argv] if os.geteuid() == 0 else argv


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _options(port: int, sockets: Path, durable: bool) -> str:
    # Tests skip fsync (nothing to keep after the run); a benchmark keeps it, as a real
    # server does, so a commit costs what it costs in use.
    return f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 -c max_connections=200" + (
        "" if durable else " -c fsync=off -c full_page_writes=off"
    )


def start_server(durable: bool = False) -> Iterator[Server]:
    initdb, pg_ctl = _bin("initdb"), _bin("pg_ctl")
    if not initdb or not pg_ctl:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) are not installed")
    root = Path(tempfile.mkdtemp(prefix="gate-pg-"))
    if os.geteuid() == 0:
        owner = pwd.getpwnam("postgres")
        os.chown(root, owner.pw_uid, owner.pw_gid)
    data, sockets = root / "data", root / "sock"
    subprocess.run(_as_owner(["mkdir", "-m", "0700", str(sockets)]), check=True)
    subprocess.run(
        _as_owner(
            [
                initdb,
                "-D",
                str(data),
                "-U",
                "gate",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ]
        ),
        check=True,
        capture_output=True,
    )
    # PostgreSQL cannot choose its own port: one found free may be taken by another test's
    # connection before it binds it, so a start that fails is tried on another port.
    for attempt in range(5):
        port = _free_port()
        started = subprocess.run(
            _as_owner(
                [
                    pg_ctl,
                    "-D",
                    str(data),
                    "-o",
                    _options(port, sockets, durable),
                    "-l",
                    str(root / "log"),
                    "-w",
                    "-t",
                    "60",
                    "start",
                ]
            ),
            capture_output=True,
        )
        if started.returncode == 0:
            break
        if attempt == 4:
            started.check_returncode()
    try:
        yield Server(port, "gate", data)
    finally:
        subprocess.run(
            _as_owner([pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"]),
            capture_output=True,
        )
        shutil.rmtree(root, ignore_errors=True)


def restart(server: Server, stop: bool = True) -> None:
    """Stop the server (`stop`) or start it again, same port."""
    pg_ctl = _bin("pg_ctl")
    assert pg_ctl
    if stop:
        subprocess.run(
            _as_owner([pg_ctl, "-D", str(server.data), "-m", "immediate", "-w", "stop"]),
            check=True,
            capture_output=True,
        )
        return
    sockets = server.data.parent / "sock"
    options = _options(server.port, sockets, durable=False)
    subprocess.run(
        _as_owner(
            [
                pg_ctl,
                "-D",
                str(server.data),
                "-o",
                options,
                "-l",
                str(server.data.parent / "log"),
                "-w",
                "start",
            ]
        ),
        check=True,
        capture_output=True,
    )
