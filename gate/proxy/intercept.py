"""Forward mode's model hosts: which hosts gate decrypts, and the upstream a request goes to."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from gate.config import Upstream, parse_upstream
from gate.proxy.routing import Route


@dataclass(frozen=True, slots=True)
class ModelHost:
    """Requests to `host` (a name, or a regex when `pattern`) whose path starts with
    `base_path` are model traffic for the upstream `name`."""

    name: str
    host: str
    base_path: str = ""
    pattern: bool = False

    def matches(self, host: str) -> bool:
        return bool(re.fullmatch(self.host, host)) if self.pattern else host == self.host


# The providers' own endpoints (docs/agents.md says which agent uses which). A name that
# is also a configured upstream goes where that upstream says (`--upstream NAME=URL`).
MODEL_HOSTS: tuple[ModelHost, ...] = (
    ModelHost("anthropic", "api.anthropic.com"),
    ModelHost("openai", "api.openai.com"),
    ModelHost("chatgpt", "chatgpt.com", "/backend-api/codex"),
    ModelHost("gemini", "generativelanguage.googleapis.com"),
    ModelHost("code-assist", "cloudcode-pa.googleapis.com"),
    ModelHost("vertex", r"([a-z0-9-]+-)?aiplatform\.googleapis\.com", pattern=True),
    ModelHost("bedrock", r"bedrock-runtime(-fips)?\.[a-z0-9-]+\.amazonaws\.com", pattern=True),
    ModelHost("github-copilot", r"api(\.[a-z0-9-]+)?\.githubcopilot\.com", pattern=True),
)


class Intercepts:
    """The model hosts plus the hosts of the upstreams the user configured."""

    def __init__(self, upstreams: Mapping[str, Upstream]):
        self.upstreams = upstreams
        own = {m.name for m in MODEL_HOSTS}
        # A configured upstream's own host is a model host too (a team gateway, say),
        # unless it is loopback (where gate delivers, not what agents ask for) or a
        # provider's host already listed: `--upstream openai=URL` must win for it.
        self.hosts = MODEL_HOSTS + tuple(
            ModelHost(u.name, u.host.lower(), u.base_path)
            for u in upstreams.values()
            if u.name not in own
            and not _loopback(u.host)
            and not any(m.matches(u.host.lower()) for m in MODEL_HOSTS)
        )
        # An upstream named as a host (`--upstream oauth2.googleapis.com=URL`): that whole
        # host goes to URL, unread (sign-in and account hosts, a loopback fake in tests).
        self.whole_hosts = {
            name: u
            for name, u in upstreams.items()
            if "." in name and not any(m.name == name for m in self.hosts)
        }

    def decrypts(self, host: str) -> bool:
        """Whether gate terminates TLS for a CONNECT to this host."""
        host = host.lower().rstrip(".")
        return host in self.whole_hosts or any(m.matches(host) for m in self.hosts)

    def name_of(self, host: str) -> str | None:
        """The upstream name of a host gate decrypts (a whole host's is the host), or None."""
        host = host.lower().rstrip(".")
        if host in self.whole_hosts:
            return host
        return next((m.name for m in self.hosts if m.matches(host)), None)

    def allow_patterns(self) -> list[str]:
        """mitmproxy's allow_hosts: every other host is relayed as an opaque tunnel."""
        out = []
        for m in self.hosts:
            body = m.host if m.pattern else re.escape(m.host)
            out.append(rf"^{body}\.?:\d+$")
        return out + [rf"^{re.escape(h)}\.?:\d+$" for h in self.whole_hosts]

    def route(self, host: str, port: int, path: str) -> Route | None:
        """The upstream a decrypted request goes to; None when it is not model traffic."""
        host = host.lower().rstrip(".")
        best: ModelHost | None = None
        for m in self.hosts:
            if (
                m.matches(host)
                and _under(path, m.base_path)
                and (best is None or len(m.base_path) > len(best.base_path))
            ):
                best = m
        if best is None:
            return None
        upstream = self.upstreams.get(best.name)
        if upstream is None or (
            best.pattern and upstream.host.lower() != host and not _overridden(upstream, best)
        ):
            # A regional host (Vertex, Bedrock): the request goes to the host it named.
            upstream = parse_upstream(best.name, f"https://{host}:{port}{best.base_path}")
        return Route(upstream, path[len(best.base_path) :] or "/", None)

    def origin(self, host: str) -> Upstream | None:
        """Where a decrypted host's other endpoints go (sign-in, account): the origin of an
        upstream the user pointed elsewhere (a team gateway, a loopback fake), whole paths
        kept; None when its upstream is the host itself (then `egress:` decides)."""
        host = host.lower().rstrip(".")
        if host in self.whole_hosts:
            return replace(self.whole_hosts[host], base_path="")
        for m in self.hosts:
            upstream = self.upstreams.get(m.name)
            if m.matches(host) and upstream is not None and _overridden(upstream, m):
                return replace(upstream, base_path="")
        return None


def _under(path: str, base: str) -> bool:
    return not base or path == base or path.startswith((base + "/", base + "?"))


def _overridden(upstream: Upstream, model: ModelHost) -> bool:
    """A pattern host's upstream set by the user (`--upstream vertex=URL`) wins."""
    return not model.matches(upstream.host.lower())


def _loopback(host: str) -> bool:
    return host in ("localhost", "::1") or host.startswith("127.")
