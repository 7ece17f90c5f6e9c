"""Where a gate may listen: on loopback only, until it can serve others safely.

A gate on another address would take any machine's requests and serve its control API
(questions, answers, the approval page) to anyone who can reach it, in clear text. Serving a
team needs TLS and per-user authentication (docs/team.md), which this gate does not have
yet, so any address but loopback is refused before anything listens.
"""

from __future__ import annotations

import ipaddress

from gate.errors import ConfigError


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 or `localhost`; a name that only resolves there today is not."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_listen(host: str) -> None:
    """Fail closed: refuse to listen anywhere but loopback."""
    if not is_loopback(host):
        raise ConfigError(
            f"gate listens only on loopback; {host!r} would serve agents and the control API"
            " of this gate to other machines without TLS or per-user authentication",
            where="host",
            hint="listen on 127.0.0.1 and share the audit instead (audit.url, docs/team.md),"
            " or put a reverse proxy with TLS and authentication in front of it")
