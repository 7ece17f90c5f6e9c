"""What a request carries besides its body (path segments, the query, headers), checked
for denied values and secrets before it leaves: gate cannot withhold them in place."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from gate.screen.detectors import Tier
from gate.screen.disclose import Scrub, readings
from gate.screen.units import is_word

# Headers that carry the caller's own credential to the provider: sent as they are, never
# stored (gate cannot tell an API key from another secret put there; docs/guarantees.md).
AUTH_HEADERS = frozenset(
    {"authorization", "x-api-key", "x-goog-api-key", "api-key", "x-amz-security-token"}
)
# Headers whose values SDKs and agents fill with their own names and versions: a denied
# value that is a plain word (`RUNTIME=python` in .env) does not refuse them.
_INFORMATIONAL = (
    "user-agent",
    "x-stainless-",
    "accept",
    "content-type",
    "x-app",
    "x-goog-api-client",
    "editor-",
    "copilot-integration-id",
    "originator",
)
# Gate's own framing and routing: replaced or removed before the request leaves.
_FRAMING = frozenset(
    {"host", "content-length", "transfer-encoding", "content-encoding", "connection"}
)


class Envelope:
    """The checks one request's path, query and headers get."""

    def __init__(self, scrub: Scrub):
        self.scrub = scrub

    def refusal(self, path: str, headers: Sequence[tuple[str, str]], google: bool) -> str | None:
        """Why the request must not leave (naming where, never what), or None."""
        base, _, _ = path.partition("?")
        segments = [s for s in base.split("/") if s]
        if any(self._holds(r) for s in segments for r in readings(s)):
            return (
                "a path segment holds a denied file's value or a likely secret; gate cannot"
                " withhold it in place, so the request was not sent"
            )
        if self.scrub.query_holds(path, google):
            return (
                "the query string holds a denied file's value or a likely secret; gate"
                " cannot withhold it in place, so the request was not sent"
            )
        return self._headers(headers)

    def _headers(self, headers: Sequence[tuple[str, str]]) -> str | None:
        names = [name.lower() for name, _ in headers]
        for name in AUTH_HEADERS:
            if names.count(name) > 1:
                # Which copy the provider reads is its choice: the other one leaves unread.
                return (
                    f"the request repeats the {name} header; gate passes one credential"
                    " header of each name, so the request was not sent"
                )
        values: list[str] = []
        for (raw, value), name in zip(headers, names, strict=True):
            if name in AUTH_HEADERS or name in _FRAMING:
                continue
            words = name.startswith(_INFORMATIONAL)
            if any(self._holds(r, words) for r in readings(f"{raw}: {value}")):
                # The name is quoted only when it is short and holds nothing itself.
                which = (
                    f"the {name!r} header"
                    if len(name) <= 40 and not self.scrub.holds(name)
                    else "a header"
                )
                return (
                    f"{which} holds a denied file's value or a likely secret; the request"
                    " was not sent"
                )
            values.append(value)
        # A value cut in two across headers, read back in their order.
        if any(self._holds(r) for r in readings("".join(values))):
            return (
                "the request's headers together hold a denied file's value or a likely"
                " secret; the request was not sent"
            )
        return None

    def _holds(self, text: str, skip_words: bool = False) -> bool:
        """A denied value (other than a plain word, when `skip_words`) or a high-tier
        secret: generic low-tier detectors would refuse provider ids and trace ids."""
        for index in self.scrub.indexes:
            for hit in index.find(text):
                if not (skip_words and is_word(text[hit.start : hit.end])):
                    return True
        secrets = self.scrub.secrets
        return secrets is not None and any(f.tier is Tier.HIGH for f in secrets.scanner.scan(text))


def google_upstream(
    name: str, host: str, names: Iterable[str] = ("gemini", "code-assist", "vertex")
) -> bool:
    """Whether an upstream takes Google's `?key=` API key: the Gemini API, Code Assist or
    Vertex, by name or by host."""
    return name in names or host.lower().endswith(".googleapis.com")
