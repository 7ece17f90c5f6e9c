"""Talk to a running gate's control API: list pending questions, answer them.

Every gate serving a data dir (a `gate serve`, or one a `gate run` started) leaves a small
file in `<data>/control/` saying where it listens; all of them share the data dir's token
(`<data>/control.token`, 0600), sent as `Authorization: Bearer <token>`.
"""

from __future__ import annotations

import json
import os
import secrets
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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


def register(data_dir: Path, host: str, port: int) -> Path:
    """Say where this gate listens, for `gate pending` and friends; removed on stop."""
    path = dirs.private_dir(data_dir / GATES_DIR) / f"{os.getpid()}-{port}.json"
    dirs.write_private(
        path,
        json.dumps({"schemaVersion": 1, "pid": os.getpid(), "host": host, "port": port}).encode(),
    )
    return path


def _gates(data_dir: Path) -> list[str]:
    """Base URLs of the gates that said they serve this data dir and whose process lives."""
    out = []
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
        out.append(base_url(host, int(info["port"])))
    return out


@dataclass
class ControlClient:
    """The control API of every gate serving one data dir."""

    bases: list[str]
    token: str

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
        bases = _gates(data_dir)
        token_path = data_dir / TOKEN_FILE
        if not bases or not token_path.exists():
            raise Unreachable(
                f"no gate is running for data dir {data_dir}",
                hint="start one with `gate serve` (or `gate run -- AGENT`), or set"
                " GATE_DATA_DIR to the data dir of the gate you mean",
            )
        return cls(bases, token_path.read_text(encoding="ascii").strip())

    def pending(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for base in self._live():
            out += self._call(base, "GET", "/_gate/api/pending")[1].get("pending", [])
        return sorted(out, key=lambda q: q.get("created", 0))

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
        req = urllib.request.Request(  # noqa: S310 (a loopback http URL we built)
            base + path,
            method=method,
            data=None if body is None else json.dumps(body).encode(),
            headers=headers,
        )
        # Never through a proxy from the environment: the gate is on loopback.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        try:
            with opener.open(req, timeout=10) as resp:
                return resp.status, json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, json.loads(exc.read())
            except ValueError:
                return exc.code, {}
        except (OSError, ValueError) as exc:
            raise Unreachable(
                f"the gate at {base} did not answer ({exc})",
                hint="is it still running? `gate paths` shows the data dir",
            ) from exc
