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


@dataclass(frozen=True, slots=True)
class Scrub:
    """The screens a gate runs, applied to what it writes down."""

    secrets: SecretScreen | None
    indexes: Iterable[DeniedIndex] = ()

    def text(self, text: str) -> str:
        """`text` with every denied value and likely secret in it replaced by its kind."""
        for index in self.indexes:
            if index.find(text):
                text, _ = index.redact(text)
        if self.secrets is not None:
            found = self.secrets.scanner.scan(text)
            for f in reversed(found):  # sorted, never overlapping
                text = f"{text[: f.start]}[{f.kind}]{text[f.end :]}"
        return text

    def holds(self, text: str) -> bool:
        return self.text(text) != text

    def path(self, path: str) -> str:
        """A request path as stored: a segment that holds a finding (read as a server
        decodes it) is withheld, so is a whole query that holds one."""
        base, sep, query = path.partition("?")
        segs = [WITHHELD if self.holds(unquote(s)) else s for s in base.split("/")]
        base = "/".join(segs)
        if sep and (self.holds(unquote_plus(query)) or self.holds(unquote(query))):
            return f"{base}?{WITHHELD}"
        return base + sep + query

    def query_holds(self, path: str) -> bool:
        """Whether the query (read as form data and as a URL) holds a finding; Gemini's
        `key=` is the caller's own API key, sent as auth and never stored."""
        _, _, query = path.partition("?")
        rest = "&".join(p for p in query.split("&") if not p.startswith("key="))
        return bool(rest) and (self.holds(unquote_plus(rest)) or self.holds(unquote(rest)))

    def value(self, value: str | None) -> str | None:
        """A single client value (an id, a name, a model): withheld whole if it holds one."""
        if value is None or not self.holds(value):
            return value
        return WITHHELD
