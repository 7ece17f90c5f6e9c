"""HTTP/2 clients get the same JSON error as HTTP/1 ones when the upstream fails."""

from __future__ import annotations

from mitmproxy.proxy import commands, events, layer
from mitmproxy.proxy.layers import http as http_layers
from mitmproxy.proxy.layers.http import _http2
from mitmproxy.proxy.layers.http._events import ResponseProtocolError

from gate.proxy import replies


class JsonErrorsHttp2Server(_http2.Http2Server):
    """mitmproxy answers a failed upstream over HTTP/2 with an HTML page (its HTTP/1 page
    gate already replaces): this server sends gate's JSON error on that stream instead."""

    def _handle_event(self, event: events.Event) -> layer.CommandGenerator[None]:
        if isinstance(event, ResponseProtocolError) and self._answerable(event):
            status = event.code.http_status_code()
            assert status is not None
            self.h2_conn.send_headers(
                event.stream_id,
                [
                    (b":status", b"%d" % status),
                    (b"content-type", b"application/json"),
                    (b"x-gate-error", b"upstream"),
                ],
            )
            self.h2_conn.send_data(
                event.stream_id, replies.upstream_failed(status, event.message), end_stream=True
            )
            yield commands.SendData(self.conn, self.h2_conn.data_to_send())
            return
        yield from super()._handle_event(event)

    def _answerable(self, event: ResponseProtocolError) -> bool:
        """Whether mitmproxy would send its error page: the stream is open, nothing of the
        response has been sent, and the error has an HTTP status."""
        if self.is_closed(event.stream_id) or not self.is_open_for_us(event.stream_id):
            return False
        stream = self.h2_conn.streams[event.stream_id]
        return not stream.state_machine.headers_sent and event.code.http_status_code() is not None


def install() -> None:
    """Use it for every HTTP/2 client connection (mitmproxy offers no hook for the page):
    the HTTP layer makes its server by this module-level name."""
    names = vars(http_layers)
    if names["Http2Server"] is not JsonErrorsHttp2Server:
        names["Http2Server"] = JsonErrorsHttp2Server
