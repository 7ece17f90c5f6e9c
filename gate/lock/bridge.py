"""Outside the lock: accept on the lock's loopback port and pipe each connection to the gate."""

from __future__ import annotations

import asyncio
import socket
import threading

from gate.lock import BRIDGE_SOURCE

_CHUNK = 65536


class Bridge:
    """Relays connections from the listening socket made inside the lock to `gate_port`.

    Connects from BRIDGE_SOURCE, so the gate can tell a locked agent from the person: its
    control API answers 127.0.0.1 only.
    """

    def __init__(self, listener: socket.socket, gate_host: str, gate_port: int):
        self.listener, self.target = listener, (gate_host, gate_port)
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._main, name="gate-lock-bridge", daemon=True)
        self._server: asyncio.Server | None = None

    def start(self) -> None:
        self.listener.setblocking(False)
        # Listening before the thread runs the loop: a stop() right after is then safe.
        self._server = self.loop.run_until_complete(
            asyncio.start_server(self._relay, sock=self.listener)
        )
        self._thread.start()

    def stop(self) -> None:
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join(timeout=5)
        self.listener.close()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            if self._server is not None:
                self._server.close()
            for task in asyncio.all_tasks(self.loop):
                task.cancel()
            self.loop.run_until_complete(asyncio.sleep(0))
            self.loop.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(
                *self.target, local_addr=(BRIDGE_SOURCE, 0)
            )
        except OSError:
            writer.close()
            return
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            for w in (writer, up_writer):
                w.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        writer.close()  # one side broke: so does the other
