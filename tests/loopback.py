"""The shared plumbing of the fake servers tests run on 127.0.0.1."""

from __future__ import annotations

import socketserver
import threading
from http.server import ThreadingHTTPServer
from typing import Any


class LoopbackServer:
    """Serves a handler class on a free loopback port in a daemon thread."""

    server: socketserver.TCPServer

    def serve(self, handler: Any, server_class: Any = ThreadingHTTPServer) -> None:
        self.server = server_class(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True  # type: ignore[attr-defined]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
