"""Path-prefix routing: `/NAME/...` and `/_run/ID/NAME/...` → an upstream and its path."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gate.config import Upstream


@dataclass(frozen=True, slots=True)
class Route:
    upstream: Upstream
    path: str            # the path the upstream sees (query kept), without gate's prefix
    run_id: str | None


def resolve(path: str, upstreams: Mapping[str, Upstream]) -> Route | None:
    """The route for a request path, or None when no upstream matches."""
    run_id = None
    if path.startswith("/_run/"):
        run_id, _, path = path[len("/_run/"):].partition("/")
        path = "/" + path
    name, rest = _split(path)
    upstream = upstreams.get(name)
    if upstream is None:
        return None
    return Route(upstream, rest, run_id)


def _split(path: str) -> tuple[str, str]:
    head, sep, rest = path.lstrip("/").partition("/")
    name, qsep, query = head.partition("?")
    if qsep:  # `/anthropic?x=1` has no path after the name
        return name, "/?" + query
    return name, "/" + rest if sep else "/"


def safe_path(path: str) -> str:
    """The path as stored: a query's API key (Gemini's `?key=`) is never written down."""
    base, sep, query = path.partition("?")
    if not sep:
        return path
    parts = [p.split("=", 1)[0] + "=***" if p.startswith("key=") else p
             for p in query.split("&")]
    return base + "?" + "&".join(parts)
