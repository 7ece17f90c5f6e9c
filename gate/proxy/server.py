"""Run mitmproxy in-process with gate's addon: in the foreground, or in a thread for `gate run`."""

from __future__ import annotations

import asyncio
import signal
import socket
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from loguru import logger
from mitmproxy import http, options
from mitmproxy.net.http import http1
from mitmproxy.proxy.layers.http import _http1
from mitmproxy.tools.dump import DumpMaster

from gate import dirs
from gate.audit.store import AuditStore
from gate.config import Config
from gate.proxy import ca, h2_errors, replies, startup, team, tls, ws_control
from gate.proxy.addon import GateAddon
from gate.proxy.forward import ForwardAddon
from gate.rules.layers import RECHECK_AFTER, PolicyStore
from gate.screen import relayed
from gate.served import Listening, clear_server_file, write_server_file
from gate.users import Users

# Reverse mode needs a default upstream; gate routes every request itself, so this one is
# never contacted (lazy connections open only to the upstream a request is routed to).
_UNUSED_UPSTREAM = "reverse:http://127.0.0.1:9/"


def check_port(host: str, port: int) -> None:
    """Raise OSError when the port is taken now: before the audit opens and the CA is made,
    and `gate run` moves to a free port at once. Only a quick look: the port can still be
    taken before the listener binds it, whose own failure startup.py reports the same way."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, port))


def _json_error_pages() -> None:
    """mitmproxy answers a request whose upstream failed with an HTML page, which agents
    show as gibberish or retry on forever; gate answers in the providers' JSON instead.
    (mitmproxy offers no hook for this page, so its builder is replaced, once.)"""
    if getattr(_http1.make_error_response, "gate", False):
        return

    def make(status_code: int, message: str = "") -> bytes:
        return bytes(
            http1.assemble_response(
                http.Response.make(
                    status_code,
                    replies.upstream_failed(status_code, message),
                    {
                        "content-type": "application/json",
                        "connection": "close",
                        "x-gate-error": "upstream",
                    },
                )
            )
        )

    make.gate = True  # type: ignore[attr-defined]
    _http1.make_error_response = make
    h2_errors.install()  # and the same page over HTTP/2


def build_master(
    config: Config, data_dir: Path, addon: GateAddon, users: Users | None = None
) -> DumpMaster:
    _json_error_pages()
    ws_control.install()  # the agent's ping, pong and close frames are screened too
    opts = options.Options()
    master = DumpMaster(opts, with_termlog=False, with_dumper=False)
    # An error logged while starting stops the gate, through gate's own error path: a
    # listener that cannot open raises its OSError, as check_port does (startup.py).
    errorcheck = master.addons.get("errorcheck")
    errorcheck.finish()  # its log handler
    master.addons.remove(errorcheck)
    master.addons.add(startup.StartupCheck())
    forward = (
        ForwardAddon(
            config,
            data_dir,
            addon.audit,
            addon._scrub,
            addon.runs,
            relayed.RelayScreen(addon.policies, addon.screens),
        )
        if config.forward
        else None
    )
    if forward is None:
        ca.made(data_dir)  # mitmproxy loads it from its confdir even when it decrypts nothing
    else:
        ca.ensure(data_dir)  # and the bundle agents trust
        opts.update(
            # Only model hosts are decrypted; every other CONNECT is relayed as bytes,
            # through the forward addon's tcp hooks so each tunnel is counted and recorded.
            allow_hosts=forward.intercepts.allow_patterns(),
            show_ignored_hosts=True,
            # Never contact the host a client named to copy its certificate: where a
            # request goes is decided per request (an upstream may be a loopback fake).
            upstream_cert=False,
        )
    opts.update(
        listen_host=config.host,
        listen_port=config.port,
        mode=["regular"] if forward is not None else [_UNUSED_UPSTREAM],
        connection_strategy="lazy",
        confdir=str(dirs.private_dir(data_dir / "mitmproxy")),
        # Requests are always read whole (they must be screened); never stream them.
        stream_large_bodies=None,
        ssl_insecure=False,
        # The control API checks the Host a client sent (DNS rebinding); gate sets the
        # upstream's Host itself when it forwards.
        keep_host_header=True,
    )
    if config.tls.on:
        master.addons.add(tls.ListenerTls(tls.server_context(config.tls)))
    # Before every other addon: the user's token comes off the request first.
    master.addons.add(team.TeamAuth(config, users or Users(data_dir)))
    if forward is not None:
        master.addons.add(forward)  # before the gate addon: it sorts each request first
    master.addons.add(addon, addon.recorder)
    return master


async def serve(
    config: Config,
    data_dir: Path,
    *,
    on_ready: Callable[[Listening], None] | None = None,
    stop: asyncio.Event | None = None,
    advertise: bool = False,
    rules_recheck: float = RECHECK_AFTER,
) -> None:
    """Serve until `stop` is set (or the master shuts down); audit writes finish first.
    `rules_recheck`: how long a look at the rule files is trusted (gate/rules/layers.py)."""
    users = Users(data_dir)
    team.check_listen(config, users)  # before anything listens or opens the audit
    if config.tls.on:
        tls.server_context(config.tls)  # a bad certificate or key stops it here
    check_port(config.host, config.port)
    audit = AuditStore(data_dir / "audit.db", config.audit, background=True)
    policies = PolicyStore(recheck_after=rules_recheck)
    ready: list[Listening] = []

    def _ready(host: str, port: int) -> None:
        _lock_down(data_dir / "mitmproxy")
        ready.append(Listening(host, port, config.tls.on, config.tls.cert or None))
        if advertise:  # only a long-lived `gate serve` is offered to other runs for reuse
            write_server_file(data_dir, ready[0], addon.instance)
        if on_ready:
            on_ready(ready[0])

    addon = GateAddon(config, data_dir, policies, audit, _ready, users)
    master = build_master(config, data_dir, addon, users)
    asyncio.get_running_loop().set_exception_handler(_quiet_cancel)

    async def stop_when_asked() -> None:
        assert stop is not None
        await stop.wait()
        # Close the listeners first, so no new request starts while the master winds down.
        await master.addons.get("proxyserver").servers.update([])
        master.shutdown()

    waiter = asyncio.ensure_future(stop_when_asked()) if stop else None
    try:
        await master.run()
    finally:
        master.addons.get("errorcheck").finish()
        # A start that failed after the listeners opened leaves them open (mitmproxy's done
        # hook does not close them); stop_when_asked closed them already otherwise.
        await master.addons.get("proxyserver").servers.update([])
        if not ready:  # a failed start may never reach mitmproxy's done hook (it is idempotent)
            addon.done()
        if waiter:
            waiter.cancel()
        if ready and advertise:
            clear_server_file(data_dir)
        audit.close()
        logger.info("gate stopped")


def _quiet_cancel(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """Stopping cancels every open connection's task, a parked one too; asyncio's stream
    callback then reports each as an error with a traceback. A cancelled connection is how
    a gate stops, not an error: only real errors are reported."""
    if isinstance(context.get("exception"), asyncio.CancelledError):
        return
    loop.default_exception_handler(context)


def serve_forever(
    config: Config, data_dir: Path, on_ready: Callable[[Listening], None] | None = None
) -> None:
    """Foreground `gate serve`: SIGINT/SIGTERM stop it cleanly."""

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await serve(config, data_dir, on_ready=on_ready, stop=stop, advertise=True)

    asyncio.run(main())


class BackgroundGate:
    """A gate in a thread of this process, for `gate run` and tests. It looks at the rule
    files on every request unless given `rules_recheck` (`gate run` passes RECHECK_AFTER):
    a test that edits a rule file sees the edit on its next request."""

    def __init__(
        self,
        config: Config,
        data_dir: Path,
        *,
        advertise: bool = False,
        rules_recheck: float = 0.0,
    ):
        self.config = config
        self.rules_recheck = rules_recheck
        self.advertise = advertise
        self.data_dir = data_dir
        self.listening: Listening | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread = threading.Thread(target=self._main, name="gate-proxy", daemon=True)

    def start(self, timeout: float = 30.0) -> Listening:
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("gate did not start listening in time")
        if self._error is not None:
            raise self._error
        assert self.listening is not None
        return self.listening

    def stop(self, timeout: float = 10.0) -> None:
        """Stop and wait; raises when the gate is still running after `timeout` seconds."""
        if self._loop is not None and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread.is_alive():
            self._thread.join(timeout)
        if self._thread.is_alive():
            raise RuntimeError(f"the gate did not stop within {timeout:g} s")

    def _main(self) -> None:
        async def main() -> None:
            self._loop = asyncio.get_running_loop()
            self._stop = asyncio.Event()

            def ready(listening: Listening) -> None:
                self.listening = listening
                self._ready.set()

            await serve(
                self.config,
                self.data_dir,
                on_ready=ready,
                stop=self._stop,
                advertise=self.advertise,
                rules_recheck=self.rules_recheck,
            )

        try:
            asyncio.run(main())
        except BaseException as exc:
            self._error = exc
        finally:
            self._ready.set()


def _lock_down(path: Path) -> None:
    """mitmproxy writes its CA files world-readable; everything gate keeps is owner-only."""
    for item in path.iterdir():
        if item.is_file():
            item.chmod(0o600)
