"""The shared plumbing of the fake servers tests run on 127.0.0.1."""

from __future__ import annotations

import re
import socket
import socketserver
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

# How often serve_forever looks whether stop() was asked for: stop() waits for that look,
# half of socketserver's default 0.5 s on average, and nearly every test stops a fake.
POLL_SECONDS = 0.01
# socketserver listens with a backlog of 5. A burst of connections (sixteen SDK sessions at
# once, a gate opening one upstream connection for each) overflows it: the kernel answers
# with SYN cookies and resets a connection the client already thinks open, which mitmproxy
# reports as "server closed connection". Real providers listen with a deep backlog.
BACKLOG = 1024


class LoopbackServer:
    """Serves a handler class on a free loopback port in a daemon thread."""

    server: socketserver.TCPServer

    def serve(self, handler: Any, server_class: Any = ThreadingHTTPServer) -> None:
        self.server = server_class(("127.0.0.1", 0), handler, bind_and_activate=False)
        self.server.request_queue_size = BACKLOG
        self.server.daemon_threads = True  # type: ignore[attr-defined]
        try:
            self.server.server_bind()
            self.server.server_activate()
        except BaseException:
            self.server.server_close()
            raise
        threading.Thread(
            target=self.server.serve_forever, args=(POLL_SECONDS,), daemon=True
        ).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def event_stream(handler: BaseHTTPRequestHandler) -> Iterator[Any]:
    """An SSE response framed as the real APIs frame it (chunked transfer encoding, the
    connection kept alive), not ended by closing the connection. Yields `send(bytes)`."""
    handler.send_response(200)
    handler.send_header("content-type", "text/event-stream")
    handler.send_header("cache-control", "no-cache")
    handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()

    def send(data: bytes) -> None:
        handler.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        handler.wfile.flush()

    yield send
    handler.wfile.write(b"0\r\n\r\n")
    handler.wfile.flush()


def read_until(sock: socket.socket, marker: bytes, head: bytes = b"") -> bytes:
    """What `sock` sends until `marker` (or until it closes), after `head`."""
    while marker not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return head


def served_port(first_line: str) -> int:
    """The port `gate serve --port 0` chose, from its first line ("gate listening on
    http://127.0.0.1:PORT ..."). A port picked free beforehand and passed in may be taken
    by another test's connection before the gate binds it (the gate then exits)."""
    m = re.match(r"gate listening on https?://[^ ]*:(\d+)", first_line)
    assert m is not None, first_line
    return int(m.group(1))
