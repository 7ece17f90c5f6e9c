"""`WebFetch(domain:...)` rules: the host of every URL a fetch tool was given."""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import urlsplit

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s<>\"'`]+")


@lru_cache(maxsize=1024)
def compile_pattern(spec: str) -> re.Pattern[str]:
    """`domain:example.com` as a regex over a host name.

    Case-insensitive and a trailing dot ignored; a leading `*.` covers subdomains at any
    depth but not the apex; any other `*` matches within one label; `domain:*` is any host.
    """
    pattern = spec.removeprefix("domain:").strip().lower().rstrip(".")
    if pattern == "*":
        return re.compile(r".+")
    head = ""
    if pattern.startswith("*."):
        head, pattern = r"(?:[^.]+\.)+", pattern[2:]
    labels = ("[^.]*".join(re.escape(p) for p in label.split("*")) for label in pattern.split("."))
    return re.compile(head + r"\.".join(labels))


def hosts(target: str) -> tuple[str, ...]:
    """Hosts of the URLs in a fetch tool's target: a URL, or a prompt holding URLs (Gemini
    CLI's `web_fetch`). A bare `example.com/x` is read as a URL."""
    urls = _URL.findall(target) or [
        target.strip() if "://" in target else "http://" + target.strip()
    ]
    out: dict[str, None] = {}
    for url in urls:
        try:
            host = urlsplit(url).hostname
        except ValueError:
            host = None
        if host:
            out.setdefault(host.lower().rstrip("."), None)
    return tuple(out)


def matches_any(pattern: re.Pattern[str], names: tuple[str, ...]) -> bool:
    return any(pattern.fullmatch(h) for h in names)


def matches_every(pattern: re.Pattern[str], names: tuple[str, ...]) -> bool:
    return bool(names) and all(pattern.fullmatch(h) for h in names)
