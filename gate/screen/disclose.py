"""What gate writes about a request (block reasons, logs, audit fields) without its secrets.

Block reasons and audit rows may name what the client sent: a path, a query, a model, a
tool call's id or name. None of them is written in clear when it holds what the content
screens find in a body: a denied file's value or a likely secret is replaced by its kind.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import unquote, unquote_plus

from gate.screen.content import SecretScreen
from gate.screen.fingerprints import DeniedIndex

WITHHELD = "[withheld]"
# Percent-decoding is undone this many times over: a value escaped twice (`%2573`) is
# still the value to whoever reads it.
_DECODINGS = 4


def readings(text: str) -> list[str]:
    """`text` as written and as URL and form decoding read it, repeatedly."""
    out = [text]
    for decode in (unquote, unquote_plus):
        current = text
        for _ in range(_DECODINGS):
            nxt = decode(current)
            if nxt == current:
                break
            current = nxt
            out.append(current)
    return list(dict.fromkeys(out))


def api_key_param(params: list[str]) -> int | None:
    """Where a Google upstream's API key is among a query's parameters: the first `key=`."""
    return next((i for i, p in enumerate(params) if p.startswith("key=")), None)


@dataclass(frozen=True, slots=True)
class Scrub:
    """The screens a gate runs, applied to what it writes down."""

    secrets: SecretScreen | None
    indexes: Iterable[DeniedIndex] = ()

    def text(self, text: str) -> str:
        """`text` with every denied value and likely secret in it replaced by its kind."""
        for index in self.indexes:
            text, _ = index.redact(text)
        if self.secrets is not None:
            found = self.secrets.scanner.scan(text)
            for f in reversed(found):  # sorted, never overlapping
                text = f"{text[: f.start]}[{f.kind}]{text[f.end :]}"
        return text

    def holds(self, text: str) -> bool:
        return self.text(text) != text

    def holds_bytes(self, payload: bytes) -> bool:
        """Whether bytes (a WebSocket control frame's payload) hold a finding, read as
        UTF-8 and byte by byte, percent-decoded again and again."""
        texts = dict.fromkeys((payload.decode("utf-8", "replace"), payload.decode("latin-1")))
        return any(self.holds(r) for text in texts for r in readings(text))

    def path(self, path: str) -> str:
        """A request path as stored: a segment that holds a finding (read as a server
        decodes it, or decoded again) is withheld, so is a whole query that holds one."""
        base, sep, query = path.partition("?")
        segs = [WITHHELD if any(self.holds(r) for r in readings(s)) else s for s in base.split("/")]
        base = "/".join(segs)
        if sep and any(self.holds(r) for r in readings(query)):
            return f"{base}?{WITHHELD}"
        return base + sep + query

    def query_holds(self, path: str, google: bool = False) -> bool:
        """Whether the query (read as form data and as a URL) holds a finding. On a Google
        upstream the first `key=` is the caller's own API key, sent as auth and never
        stored; a second one, or `key=` anywhere else, is screened like any parameter."""
        _, _, query = path.partition("?")
        params = query.split("&")
        if google and (first := api_key_param(params)) is not None:
            del params[first]
        rest = "&".join(params)
        return bool(rest) and any(self.holds(r) for r in readings(rest))

    def value(self, value: str | None) -> str | None:
        """A single client value (an id, a name, a model): withheld whole if it holds one."""
        if value is None or not self.holds(value):
            return value
        return WITHHELD
