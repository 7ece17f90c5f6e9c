"""The optional decision helper: a local program that proposes an answer to a question.

gate POSTs the question (as shown to a person: masked previews, never a value) to
`decisions.helper_url` and reads back `{"answer": "approve" | "redact" | "block"}`. The
helper only proposes; any failure (refused, slow, malformed) means no proposal. A helper
off this machine would receive what the person sees, so a non-loopback URL is refused
unless `decisions.allow_remote: true`.
"""

from __future__ import annotations

import ipaddress
import json
import urllib.parse
import urllib.request
from typing import Any

from loguru import logger

from gate.ask.choices import ANSWERS
from gate.errors import ConfigError

MAX_REPLY = 64 << 10
_WHERE = "decisions.helper_url"


def check_helper_url(url: str, allow_remote: bool) -> str:
    """The URL if gate may use it; ConfigError naming the field otherwise."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{url!r} is not an http(s) URL",
            where=_WHERE,
            hint="for example http://127.0.0.1:8790/propose",
        )
    if not allow_remote and not is_loopback(parts.hostname):
        raise ConfigError(
            f"{parts.hostname} is not this machine: the helper would receive every question",
            where=_WHERE,
            hint="use a loopback address (127.0.0.1, ::1, localhost), or set"
            " decisions.allow_remote: true if you trust that host",
        )
    return url.strip()


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def propose(url: str, question: dict[str, Any], timeout: float = 2.0) -> str | None:
    """The helper's proposed answer, or None on any failure; never raises."""
    if urllib.parse.urlsplit(url).scheme not in ("http", "https"):
        return None
    request = urllib.request.Request(  # noqa: S310 (http or https, checked above)
        url,
        data=json.dumps(question, default=str).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Accept": "application/json"},
    )
    try:
        with _OPENER.open(request, timeout=timeout) as reply:
            data = json.loads(reply.read(MAX_REPLY + 1)[:MAX_REPLY])
        answer = data.get("answer") if isinstance(data, dict) else None
    except Exception as exc:  # a helper is advice; without it the person decides
        logger.info("decision helper gave no answer ({})", type(exc).__name__)
        return None
    if not isinstance(answer, str) or answer not in ANSWERS:
        logger.info("decision helper answered {!r}, not approve/redact/block", str(answer)[:40])
        return None
    return str(answer)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A redirect could carry the question to another host: treat it as a failure."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


# No proxy from the environment (HTTP_PROXY would see every question), no redirects.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect)
