"""A throwaway stage: a temp project with secrets, a loopback fake provider, a gate between."""

from __future__ import annotations

import json
import shutil
import tempfile
import urllib.request
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import Any

from gate import runs
from gate.config import AskConfig, Config, parse_upstream
from gate.demo import secrets
from gate.demo.fake import FakeProvider
from gate.proxy.server import BackgroundGate

ENV_FILE = ".env"
TOKEN_FILE = "config/deploy.yaml"  # noqa: S105 (a file name)


class Stage:
    """`with Stage(ask=...) as s:` a gate whose only upstream is the fake, in a temp dir
    removed afterwards; `s.turn(...)` sends one scripted agent turn through it."""

    def __init__(self, *, ask: bool) -> None:
        self.ask = ask
        self.root = Path(tempfile.mkdtemp(prefix="gate-demo-"))
        self.project, self.data = self.root / "project", self.root / "data"
        self.env_value, self.token = secrets.env_value(), secrets.github_token()
        self.fake = FakeProvider()
        self._gate: BackgroundGate | None = None
        self.base = ""

    def __enter__(self) -> Stage:
        try:
            self._start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def _start(self) -> None:
        (self.project / "config").mkdir(parents=True)
        (self.project / ".git").mkdir()  # the project's root, for ./ rules
        (self.project / ENV_FILE).write_text(f"STRIPE_KEY={self.env_value}\n")
        (self.project / TOKEN_FILE).write_text(
            f"deploy:\n  registry: ghcr.io\n  token: {self.token}\n"
        )
        self.fake.start()
        config = replace(
            Config(), port=0, ask=AskConfig(mode="ask" if self.ask else "never", default="redact")
        )
        config = config.with_upstreams({"anthropic": parse_upstream("anthropic", self.fake.url)})
        self._gate = BackgroundGate(config, self.data)
        listening = self._gate.start()
        run = runs.register(self.data, str(self.project), "generic")
        self.base = f"{listening.base_url}/_run/{run.id}/anthropic"

    def close(self) -> None:
        if self._gate is not None:
            self._gate.stop()
            self._gate = None
        self.fake.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    def turn(self, name: str, tool_input: dict[str, Any], output: str) -> dict[str, Any]:
        """One agent turn: it called tool `name` and sends the tool's output to the model."""
        messages = [
            {"role": "user", "content": "Get the deploy settings ready."},
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_demo_1", "name": name, "input": tool_input}
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_demo_1", "content": output}
                ],
            },
        ]
        body = json.dumps({"model": "claude-demo", "max_tokens": 64, "messages": messages})
        req = urllib.request.Request(  # noqa: S310 (the gate on loopback)
            f"{self.base}/v1/messages",
            data=body.encode(),
            method="POST",
            headers={
                "content-type": "application/json",
                "x-api-key": "demo-no-key",
                "anthropic-version": "2023-06-01",
                "user-agent": "gate-demo/1",
            },
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=300) as resp:
            return dict(json.loads(resp.read()))

    def read_env(self) -> dict[str, Any]:
        path = self.project / ENV_FILE
        return self.turn("Read", {"file_path": str(path)}, path.read_text())

    def cat_token_file(self) -> dict[str, Any]:
        return self.turn(
            "Bash", {"command": f"cat {TOKEN_FILE}"}, (self.project / TOKEN_FILE).read_text()
        )

    def leaked(self) -> list[str]:
        """Which of the stage's secrets reached the fake provider (none, if gate works)."""
        wire = b"".join(self.fake.seen)
        return [
            name
            for name, value in (("the .env value", self.env_value), ("the token", self.token))
            if value.encode() in wire
        ]
