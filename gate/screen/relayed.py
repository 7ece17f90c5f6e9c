"""Requests gate relays without reading them as a format (a decrypted host's other
endpoints, plain HTTP to an allowed host), screened as opaque text.

There is no wire format to put a placeholder in, so what such a request holds is decided as
a signed field's is: a denied file's value or a high-tier secret refuses it, whatever the
secrets policy's redact or ask says, and a detector the policy blocks refuses it at any
tier. Generic low-tier findings are too uncertain to refuse a request for. The caller's
own credential to the host that issued it passes: its credential headers (as on model
traffic), and the few sign-in secrets in `ISSUED_BY` sent to their sign-in host.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from gate.providers.segments import Role, Segment
from gate.rules.engine import Policy
from gate.rules.layers import PolicyStore
from gate.screen import calls, codings, content, unpack
from gate.screen.content import SecretScreen
from gate.screen.disclose import Scrub
from gate.screen.envelope import Envelope
from gate.screen.fingerprints import DeniedIndex
from gate.screen.request import Screens
from gate.screen.verdict import Blocked

# The agent's own sign-in secrets, by kind, and the hosts that issued them: an OAuth
# client's secret (Gemini CLI's ships in its source) is in every token refresh it sends
# there. Sign-in hosts only, which publish nothing they are sent: a token sent to a host
# that can publish it (a gist on api.github.com) leaks, even to its issuer.
ISSUED_BY: dict[str, frozenset[str]] = {
    "google-oauth-secret": frozenset({"oauth2.googleapis.com"}),
}
UNREAD = "gate relays this request unread and cannot withhold it in place, so it was not sent"


@dataclass(frozen=True, slots=True, kw_only=True)
class Relayed:
    """A request as it would leave: the host the agent named, its target and headers, and
    its body as sent (content-coded or not)."""

    host: str  # lower-cased
    path: str  # query included
    headers: Sequence[tuple[str, str]]
    body: bytes
    # The headers this host reads as the caller's own credential (a decrypted model host's,
    # as on its model traffic); none for a host gate only relays.
    credentials: frozenset[str] = frozenset()
    google: bool = False  # the host takes Google's `?key=` API key
    decrypted: bool = False  # gate terminates TLS for it: the host is the one named


@dataclass(frozen=True, slots=True)
class RelayScreen:
    """The rules, denied-file indexes and secret scanner a gate screens model traffic with,
    applied to what it relays."""

    policies: PolicyStore
    screens: Screens

    def refusal(
        self, req: Relayed, root: str | None, where: str = "the request body"
    ) -> str | None:
        """Why `req` must not leave (what was found and where, never the value), or None.
        `root`: the run's project, whose rules and denied files apply; None screens it
        against every project this gate knows, as a request naming none is."""
        try:
            return refusal(req, *self._rules(root), self.screens.secrets, where)
        except Blocked as exc:
            return str(exc)

    def message_refusal(self, data: bytes, root: str | None) -> str | None:
        """Why a WebSocket message relayed unread (its payload, text or binary) must not
        leave, or None."""
        message = Relayed(host="", path="/", headers=(), body=data)
        return self.refusal(message, root, "a WebSocket message")

    def _rules(self, root: str | None) -> tuple[Policy, DeniedIndex | None]:
        """The policy and denied values of `root`'s project; raises Blocked when a request
        from no known project could carry a project's denied values."""
        policy = calls.policy_for(self.policies, self.screens.indexes, root, stated=False)
        return policy, calls.denied_index(self.screens.indexes, self.policies, policy, root)


def refusal(
    req: Relayed,
    policy: Policy,
    index: DeniedIndex | None,
    secrets: SecretScreen | None,
    where: str = "the request body",
) -> str | None:
    """Why `req` must not leave: its path, query and headers read as model traffic's are
    (gate/screen/envelope.py), then its body as text; None when nothing is found."""
    scrub = Scrub(secrets, [index] if index is not None else [])
    why = Envelope(scrub).refusal(req.path, req.headers, req.google, req.credentials)
    if why is not None:
        return why
    if not req.body:
        return None
    try:
        text = body_text(req.body, [v for k, v in req.headers if k.lower() == "content-encoding"])
    except ValueError as exc:
        # Fail closed: a body gate cannot read is a body gate cannot screen.
        return f"gate cannot read {where} ({exc}), so it was not sent"
    issuer = req.host if req.decrypted else None
    return _text_refusal(text, where, issuer, policy, index, secrets)


def body_text(raw: bytes, coding: list[str]) -> str:
    """The body as text: its Content-Encoding undone strictly (as a model request's). A body
    that is itself compressed data (`gzip -c .env | curl --data-binary @-`) is read as what
    it inflates to (within a bound), followed by its bytes as sent, each byte that is not
    UTF-8 read as itself: a signature that inflates to nothing (`BZh9` before the text) or
    bytes after the compressed stream are still read. Raises ValueError (saying why) for
    what is not UTF-8 text once inflated: gate cannot tell what a binary body holds."""
    data = codings.decode(raw, codings.declared(coding))  # Undecodable is a ValueError
    if len(data) > codings.MAX_DECODED:
        raise ValueError(f"more than {codings.MAX_DECODED >> 20} MiB, more than gate screens")
    inner = unpack.inflate(data, unpack.Budget())  # as it is unless compressed; TooLarge
    try:
        text = inner.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(
            f"not UTF-8 text at byte {exc.start}: binary or compressed data gate does not read"
        ) from exc
    if inner is data:
        return text
    return text + "\n" + data.decode("utf-8", "surrogateescape")


def _text_refusal(
    text: str,
    where: str,
    issuer: str | None,
    policy: Policy,
    index: DeniedIndex | None,
    secrets: SecretScreen | None,
) -> str | None:
    """`issuer`: the host, when gate decrypted it (so the host named is the one reached)."""
    found = content.outcome(Segment((), text, Role.ATTACHMENT), index, secrets, policy)
    if found is None:
        return None
    if found.secret_block:  # the policy blocks this detector: at any tier, to any host
        return f"{found.secret_block} ({where}); {UNREAD}"
    if found.denied:
        src = found.denied[0]
        return (
            f"{where} holds a value from {src.path} (denied by {src.rule.text},"
            f" {src.rule.where}); {UNREAD}"
        )
    for f in found.secrets:
        if f.tier == "high" and issuer not in ISSUED_BY.get(f.kind, ()):
            return f"{where} holds a likely secret ({f.kind}, detector {f.rule_id}); {UNREAD}"
    return None
