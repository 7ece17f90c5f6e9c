"""URLs an upstream hands back for the client's next request (a resumable upload's session
URL, a redirect), pointed at gate again: a client that followed the provider's absolute URL
would send the file's bytes straight to the provider, unscreened."""

from __future__ import annotations

from urllib.parse import urlsplit

from gate.config import Upstream

# Google's resumable uploads: the start request's reply names where the bytes go.
SESSION_HEADERS = ("x-goog-upload-url", "x-goog-upload-control-url")
# Where a redirect (a 307/308 resends the body) or a created resource points.
_OTHER_HEADERS = ("location", "content-location")


def base(scheme: str, host: str, upstream: str, run_id: str | None) -> str:
    """The URL prefix a client reached this upstream by through gate (reverse mode)."""
    run = f"/_run/{run_id}" if run_id else ""
    return f"{scheme}://{host}{run}/{upstream}"


def rewrite(headers: object, upstream: Upstream, gate_base: str) -> str | None:
    """Point every handed-back URL on the upstream at gate, in place (`headers` is
    mitmproxy's Headers). Returns why the reply must not reach the client when an upload
    session URL points anywhere else (its bytes would leave unscreened), else None."""
    for name in (*SESSION_HEADERS, *_OTHER_HEADERS):
        values: list[str] = headers.get_all(name)  # type: ignore[attr-defined]
        if not values:
            continue
        out = []
        for value in values:
            pointed = _at_gate(value.strip(), upstream, gate_base)
            if pointed is None:
                if name in SESSION_HEADERS:
                    return (
                        f"the upstream's {name} points outside {upstream.name}'s address;"
                        " gate cannot screen an upload sent there, so the reply was withheld"
                    )
                pointed = value  # a redirect elsewhere leaves gate's route anyway
            out.append(pointed)
        headers.set_all(name, out)  # type: ignore[attr-defined]
    return None


def _at_gate(url: str, upstream: Upstream, gate_base: str) -> str | None:
    """`url` on gate's route when it is on the upstream (absolute, or a path the client
    would resolve against gate), else None."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme or parts.netloc:
        default = {"https": 443, "http": 80}.get(parts.scheme.lower())
        if (
            parts.scheme.lower() != upstream.scheme
            or (parts.hostname or "").lower() != upstream.host.lower()
            or (port or default) != upstream.port
        ):
            return None
    elif not parts.path.startswith("/"):
        return url  # relative to the request's own path: it stays under gate's route
    path = parts.path
    if upstream.base_path:
        if path != upstream.base_path and not path.startswith(upstream.base_path + "/"):
            return None
        path = path[len(upstream.base_path) :]
    query = f"?{parts.query}" if parts.query else ""
    return f"{gate_base}{path or '/'}{query}"
