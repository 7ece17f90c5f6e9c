#!/bin/sh
# The container's command: `gate serve` on loopback (another address needs TLS and users:
# GATE_SERVE_ARGS="--host 0.0.0.0 --tls-cert ... --tls-key ...", docs/team.md), with
# the port and extra options from the environment. Agents reach it from containers that
# share this one's network namespace (compose: network_mode: "service:gate").
set -eu
exec gate serve --host 127.0.0.1 --port "${GATE_PORT:-8787}" ${GATE_SERVE_ARGS:-} "$@"
