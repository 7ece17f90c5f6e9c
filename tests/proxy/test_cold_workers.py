"""A body gate has never seen, screened through a real listener, is worked out in a
screening worker (gate/screen/scan_pool.py) and sent redacted; the worker ends with its gate."""

from __future__ import annotations

import os
import random
import time
from dataclasses import replace
from pathlib import Path

import anthropic
from loguru import logger

from fake_provider import FakeProvider
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate
from messages import conversation, tool_turn
from screen.secrets_corpus import Gen, realistic_text


def _workers() -> list[int]:
    """This process's children running a screening worker."""
    pids = []
    for task in os.listdir("/proc/self/task"):
        try:  # a thread may end between the listing and the read
            children = Path(f"/proc/self/task/{task}/children").read_text().split()
        except FileNotFoundError:
            continue
        for pid in children:
            try:
                cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"gate.screen.scan_pool" in cmd:
                pids.append(int(pid))
    return pids


def _gone(pids: list[int], wait: float = 10.0) -> bool:
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if not any(os.path.exists(f"/proc/{p}") for p in pids):
            return True
        time.sleep(0.05)
    return False


def test_a_cold_body_is_screened_in_a_worker_that_ends_with_its_gate(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    g = Gen(random.SystemRandom().randrange(1 << 30))
    denied = g.password(24)
    (project / ".env").write_text(f"DATABASE_PASSWORD={denied}\n")
    config = replace(
        Config(), port=0, ask=AskConfig(mode="never"), projects=(str(project),)
    ).with_upstreams({"anthropic": parse_upstream("anthropic", provider.url)})
    server = BackgroundGate(config, gate_dirs["data"])
    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="DEBUG", format="{message}")
    try:
        listening = server.start()
        with anthropic.Anthropic(
            base_url=f"{listening.base_url}/anthropic", api_key="sk-ant-test-x", max_retries=0
        ) as client:
            for n in range(60):  # the first cold body starts the worker, screened in place
                token = g.crc_token("ghp_")
                log = realistic_text(300_000, seed=n)[0]
                result = f"{log}\nGITHUB_TOKEN={token}\npassword was {denied}\n"
                client.messages.create(
                    **conversation(
                        str(project),
                        tool_turn(f"toolu_{n}", "Bash", {"command": "cat build.log"}, result),
                    )
                )
                sent = provider.seen[-1].body.decode()
                assert token not in sent and denied not in sent
                assert "[gate: withheld a value from .env" in sent
                if any("in a worker" in line for line in lines):
                    break
                time.sleep(0.2)
            else:
                raise AssertionError("no body was screened in a worker")
        workers = _workers()
        assert workers
    finally:
        logger.remove(sink)
        server.stop()
    assert _gone(workers)
