"""Path-prefix routing: `/NAME/...` and `/_run/ID/NAME/...` → an upstream and its path.

A path is normalised as an HTTP server reads it before it is routed, its format chosen and
it is forwarded: what leaves is the path gate screened the body for, so `/v1/x/../messages`
cannot reach the Messages API as a body screened as no format.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from gate.config import Upstream


@dataclass(frozen=True, slots=True)
class Route:
    upstream: Upstream
    path: str  # the path the upstream sees (query kept), without gate's prefix
    run_id: str | None


def resolve(path: str, upstreams: Mapping[str, Upstream]) -> Route | None:
    """The route for a request path, or None when no upstream matches."""
    run_id = None
    if path.startswith("/_run/"):
        run_id, _, path = path[len("/_run/") :].partition("/")
        path = "/" + path
    name, rest = _split(path)
    upstream = upstreams.get(name)
    if upstream is None:
        return None
    return Route(upstream, rest, run_id)


_UNRESERVED = re.compile(r"%(2[dDeE]|5[fF]|7[eE]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA])")
# Escapes servers read differently (a slash, a backslash, NUL) and raw characters some
# servers take for a slash: gate cannot know which reading the provider makes.
_AMBIGUOUS = re.compile(r"%(2[fF]|5[cC]|00)|\\")


def normalise(target: str) -> str:
    """The request target with its path as a server reads it: unreserved characters
    percent-decoded, dot segments removed, repeated slashes collapsed, a trailing slash or
    dot dropped; the query is kept as sent. Raises ValueError for a path no single reading
    exists for."""
    path, sep, query = target.partition("?")
    if _AMBIGUOUS.search(path):
        raise ValueError(
            "the request path holds an encoded slash, backslash or NUL, which"
            " servers read differently"
        )
    path = _UNRESERVED.sub(lambda m: chr(int(m.group(1), 16)), path)
    out: list[str] = []
    for seg in path.split("/"):
        if seg == "..":
            if out:
                out.pop()
        elif seg not in ("", "."):
            out.append(seg)
    norm = "/" + "/".join(out)
    norm = norm.rstrip(".") or "/"
    return norm + sep + query


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
    parts = [p.split("=", 1)[0] + "=***" if p.startswith("key=") else p for p in query.split("&")]
    return base + "?" + "&".join(parts)
