"""`gate run --lock`: the agent in its own user, network, mount and pid namespaces."""

# Written into the (hidden) data dir inside a lock, so `gate approve` there can say why it
# cannot answer instead of "no gate is running".
LOCKED_MARK = "LOCKED"
# The bridge connects to the gate from this loopback address, never 127.0.0.1, so the
# control API (loopback clients only) never answers a request that came through a lock.
BRIDGE_SOURCE = "127.0.13.1"
