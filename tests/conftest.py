"""Shared fixtures: isolated gate dirs, a fake provider, a real gate listener, SDK clients."""

from __future__ import annotations

import compileall
import gc
import os
import signal
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import pytest

import postgres
from fake_provider import FakeProvider
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening

pytest_plugins = ("browser",)  # the `browser` fixture: headless chromium

# What is imported by now lives for the whole run: keep it out of every collection below, so
# the per-test collection costs what that test left behind (~0.1 ms, not ~0.2 s).
gc.collect()
gc.freeze()

GATE_SOURCE = Path(__file__).resolve().parent.parent / "gate"


def pytest_sessionstart(session: pytest.Session) -> None:
    """Byte-compile gate once, before the workers start: the suite starts hundreds of
    `python -m gate` processes, and where PYTHONDONTWRITEBYTECODE is set (as on the shared
    machine) nothing caches them, so each compiled all of gate's modules from source again
    (~0.5 s of CPU each). Python still reads a valid .pyc (checked against its source's
    mtime) under that variable; __pycache__ is ignored by git."""
    if not hasattr(session.config, "workerinput"):  # the controller (or -n0), once
        compileall.compile_dir(GATE_SOURCE, quiet=1)


# A suite started in the background by a shell without job control (`pytest &` in a script,
# a CI step) inherits SIGINT ignored, and so would every gate command a test starts: Python
# raises no KeyboardInterrupt where SIGINT is ignored at start, and the tests that press
# Ctrl-C (`gate log --follow`, `gate watch`, `gate serve`) would wait for an exit that never
# comes. Each process of the run (the controller and every worker) takes Ctrl-C back.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# Long single tests that collect last (top-level files sort after the directories): under
# xdist the run's tail is whatever test is still going when the queue empties, so these
# start first and overlap the rest (mypy alone takes a minute on a cold cache).
RUN_FIRST = ("test_lint.py", "test_docker.py")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    def rank(item: pytest.Item) -> int:
        name = item.path.name
        return RUN_FIRST.index(name) if name in RUN_FIRST else len(RUN_FIRST)

    items.sort(key=rank)  # stable: the rest keep their order


_WIDER_ENDED = pytest.StashKey[bool]()


def pytest_fixture_post_finalizer(
    fixturedef: pytest.FixtureDef[object], request: pytest.FixtureRequest
) -> None:
    """A module- or session-scoped fixture's value was frozen while its tests ran: the
    next test's collection looks at everything again, so what it let go is checked too."""
    if fixturedef.scope != "function":
        request.config.stash[_WIDER_ENDED] = True


# SDK clients a test made with no `with`: closed at its end, before the leak check collects
# (an unclosed client's pooled socket, collected, is a ResourceWarning: the test's own
# socket, not gate's; closing it says which).
_TO_CLOSE: list[Any] = []


def closed_after_test[C](client: C) -> C:
    """`client` (anything with close(): an SDK client, an httpx client), closed when the
    test that made it ends."""
    _TO_CLOSE.append(client)
    return client


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """A leak fails the test that made it: a socket or transport left open shows up as an
    unraisable ResourceWarning when collected, so collect now, inside this test's teardown,
    not at some later test's; and no background gate may outlive its test.

    The teardown's collection looks only at what this test made: what is alive when it
    starts (the test modules' imports, gate's lazily built tables, a module-scoped
    fixture's value) is frozen first, after collecting what the last test let go once its
    teardown ended (its fixtures' values). Collecting all of it after each test cost ~0.1 s
    of CPU, a sixth of the suite's."""
    if request.config.stash.get(_WIDER_ENDED, False):
        request.config.stash[_WIDER_ENDED] = False
        gc.unfreeze()
    gc.collect()
    gc.freeze()
    yield
    while _TO_CLOSE:
        _TO_CLOSE.pop().close()
    # mitmproxy keeps the last master in module globals: the test's gate would live on into
    # the next test, be frozen there and never be collected (~0.4 MB a gate).
    ctx = sys.modules.get("mitmproxy.ctx")
    for name in ("master", "options", "log"):
        if ctx is not None and hasattr(ctx, name):
            delattr(ctx, name)
    gc.collect()
    alive = [t.name for t in threading.enumerate() if t.name == "gate-proxy"]
    assert not alive, f"a background gate is still running after the test: {alive}"
    # A SIGINT disposition left changed (ignored, above all: every process the worker
    # starts later inherits SIG_IGN, and Python then never raises KeyboardInterrupt in
    # it) fails the test that changed it, not a later test's Ctrl-C.
    handler = signal.getsignal(signal.SIGINT)
    assert handler is signal.default_int_handler, f"the test left SIGINT as {handler!r}"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[postgres.Server]:
    """One real PostgreSQL on 127.0.0.1 for the whole run, started and stopped here."""
    yield from postgres.start_server()


@pytest.fixture
def pg_url(pg_server: postgres.Server) -> str:
    """A fresh, empty database on it."""
    return pg_server.new_database()


@pytest.fixture(autouse=True)
def gate_dirs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> dict[str, Path]:
    """Every test gets its own config/data dirs, home and managed-rules path. With
    GATE_TEST_ENGINE=postgresql, every audit is a fresh PostgreSQL database instead (the
    engines' parity check: `GATE_TEST_ENGINE=postgresql pytest tests/audit tests/report`)."""
    if os.environ.get("GATE_TEST_ENGINE") == "postgresql":
        server: postgres.Server = request.getfixturevalue("pg_server")
        monkeypatch.setenv("GATE_AUDIT_URL", server.new_database())
    paths = {
        "config": tmp_path / "config",
        "data": tmp_path / "data",
        "home": tmp_path / "home",
        "project": tmp_path / "project",
    }
    for p in (paths["home"], paths["project"]):
        p.mkdir()
    monkeypatch.setenv("GATE_CONFIG_DIR", str(paths["config"]))
    monkeypatch.setenv("GATE_DATA_DIR", str(paths["data"]))
    monkeypatch.setenv("GATE_MANAGED_RULES", str(tmp_path / "managed-rules.yaml"))
    monkeypatch.setenv("GATE_CLAUDE_MANAGED_DIR", str(tmp_path / "claude-managed"))
    monkeypatch.setenv("HOME", str(paths["home"]))
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)
    return paths


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    fake = FakeProvider().start()
    yield fake
    fake.stop()


@pytest.fixture
def gate(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    """A real gate listener on 127.0.0.1 whose anthropic upstream is the fake provider.
    Nobody is there to answer questions, so ask findings get the default at once
    (`ask: never`); tests/ask starts gates that ask. It knows the test's project, as
    `gate serve --project` would: requests that state no directory are screened for it."""
    config = replace(
        Config(), port=0, ask=AskConfig(mode="never"), projects=(str(gate_dirs["project"]),)
    ).with_upstreams({name: parse_upstream(name, provider.url) for name in ("anthropic", "openai")})
    server = BackgroundGate(config, gate_dirs["data"], advertise=True)  # like `gate serve`
    listening = server.start()
    yield listening
    server.stop()


@pytest.fixture
def client(gate: Listening) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(
        base_url=f"{gate.base_url}/anthropic",
        api_key="sk-ant-test-" + os.urandom(4).hex(),
        max_retries=0,
    ) as c:
        yield c


def fake_secret(prefix: str = "") -> str:
    """A value that looks like a credential, made at run time (never a real secret)."""
    return prefix + os.urandom(12).hex()


def finished_row(data_dir: Path, timeout: float = 10.0) -> dict[str, object]:
    """The newest audit row once its response is recorded (the client may read the last
    byte of a stream a moment before the gate's response hook writes status and usage)."""
    import time

    from gate.audit.store import AuditStore

    store = AuditStore(data_dir / "audit.db")
    deadline = time.monotonic() + timeout
    while True:
        row = next(store.rows(1))
        if row["status"] is not None or time.monotonic() > deadline:
            return row
        time.sleep(0.02)
