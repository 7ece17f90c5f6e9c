"""WebSocket control frames an agent sends (ping, pong, close) are screened before they leave.

mitmproxy relays a ping's or pong's payload (up to 125 bytes) and a close's reason (up to
123) to the other side as they came, and offers no hook for them: these bytes reach the
provider like a message's. So the client's side of every connection gate screens is read
here: a control frame that holds a denied file's value or a likely secret never leaves, and
the connection is closed (code 1008, policy violation) with a reason saying why.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import wsproto
from mitmproxy.proxy import events, layer
from mitmproxy.proxy.layers import websocket
from wsproto.events import CloseConnection, Ping, Pong

# flow.metadata key: `(payload) -> bool`, whether a client's control frame holds a finding.
CHECK = "gate_ws_control"
# What the agent (and the provider) are told when a control frame is withheld; no more than
# the 123 bytes a close reason may hold.
WITHHELD = "gate withheld a WebSocket {} that holds a denied file's value or a likely secret"
POLICY_VIOLATION = 1008

type Check = Callable[[bytes], bool]


class ScreenedWebsocketLayer(websocket.WebsocketLayer):
    """mitmproxy's WebSocket relay, with the client's control frames screened first."""

    def start(self, event: events.Event) -> layer.CommandGenerator[None]:
        yield from super().start(event)  # which checks that `event` is the start
        read = self.client_ws.events
        self.client_ws.events = lambda: self._screened(read())

    _handle_event = start

    def _screened(self, read: Iterator[wsproto.events.Event]) -> Iterator[wsproto.events.Event]:
        for event in read:
            yield self._control(event)

    def _control(self, event: wsproto.events.Event) -> wsproto.events.Event:
        """`event`, or a close naming what was withheld in its place."""
        if isinstance(event, (Ping, Pong)):
            if self._holds(bytes(event.payload)):
                kind = "ping" if isinstance(event, Ping) else "pong"
                return CloseConnection(POLICY_VIOLATION, WITHHELD.format(kind))
        elif (
            isinstance(event, CloseConnection)
            and event.reason
            and self._holds(event.reason.encode())
        ):
            return CloseConnection(event.code, WITHHELD.format("close reason"))
        return event

    def _holds(self, payload: bytes) -> bool:
        check: Check | None = self.flow.metadata.get(CHECK)
        if check is None:
            # Fail closed: every connection gate relays is given its check (forward mode's
            # relayed ones too); one without never carries client bytes out unscreened.
            return True
        try:
            return check(payload)
        except Exception:
            return True  # Fail closed: a frame that could not be screened never leaves.


def install() -> None:
    """Use it for every WebSocket (the HTTP layer makes its relay by this module-level name)."""
    names = vars(websocket)
    if names["WebsocketLayer"] is not ScreenedWebsocketLayer:
        names["WebsocketLayer"] = ScreenedWebsocketLayer
