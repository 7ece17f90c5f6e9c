"""Helpers for tests of asking: fake tokens, bodies, a gate that asks, background requests."""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.ask.client import ControlClient
from gate.proxy.server import Listening
from messages import conversation, tool_turn
from screen.secrets_corpus import Gen


def github_token() -> str:
    """A fake token that passes the detector's checksum, made at run time."""
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


def env_turn(project: Path, token: str, call_id: str = "toolu_1") -> dict[str, Any]:
    """A Claude Code body whose Bash tool output holds `token`."""
    return conversation(
        str(project),
        tool_turn(
            call_id, "Bash", {"command": "env"}, f"HOME=/home/me\nGITHUB_TOKEN={token}\nLANG=C\n"
        ),
    )


@dataclass
class Sent:
    """A request running in a thread: its reply, or the SDK error it raised."""

    thread: threading.Thread
    reply: Any = None
    error: BaseException | None = None

    def wait(self, timeout: float = 30.0) -> Sent:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the request is still parked"
        return self


@dataclass
class AskingGate:
    listening: Listening
    data: Path
    provider: FakeProvider

    def client(self) -> anthropic.Anthropic:
        return closed_after_test(
            anthropic.Anthropic(
                base_url=f"{self.listening.base_url}/anthropic",
                api_key="sk-ant-test-x",
                max_retries=0,
                timeout=60,
            )
        )

    def send(self, body: dict[str, Any]) -> Sent:
        """Start the request in the background (it may be parked)."""
        sent = Sent(threading.Thread(target=lambda: None))

        def run() -> None:
            try:
                with self.client() as c:
                    sent.reply = c.messages.create(**body)
            except BaseException as exc:
                sent.error = exc

        sent.thread = threading.Thread(target=run, daemon=True)
        sent.thread.start()
        return sent

    def control(self) -> ControlClient:
        return ControlClient.find(self.data)

    def wait_pending(self, n: int = 1, timeout: float = 20.0) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            pending = self.control().pending()
            if len(pending) >= n:
                return pending
            assert time.monotonic() < deadline, f"{len(pending)} question(s) pending, not {n}"
            time.sleep(0.05)
