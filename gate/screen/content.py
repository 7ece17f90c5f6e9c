"""Content screens over every outbound string: denied files' values, and likely secrets.

Both replace in place and deterministically. A hit inside a signed or opaque field, which
gate cannot edit, blocks the request instead (fail closed).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from gate.providers.segments import JsonPath, Role, Segment, Walk, get_at, set_at
from gate.rules.engine import Policy
from gate.screen import masking
from gate.screen.fingerprints import DeniedIndex
from gate.screen.secrets import Scanner, keyed_hash, load_or_create_key, placeholder
from gate.screen.verdict import Asked, Blocked, Withheld


@dataclass(frozen=True)
class SecretScreen:
    """The secret scanner and the install's placeholder key."""

    scanner: Scanner
    key: bytes

    @classmethod
    def load(cls, data_dir: Path) -> SecretScreen:
        return cls(Scanner(), load_or_create_key(data_dir))


def denied_values(walk: Walk, body: Any, index: DeniedIndex, done: set[str | None],
                  changed: set[JsonPath]) -> list[Withheld]:
    """Replace every denied file's value wherever it appears, whatever carried it."""
    if not len(index):
        return []
    found: dict[tuple[str, str], Withheld] = {}
    for seg in _live(walk, done):
        new, hits = index.redact(seg.text)
        if not hits:
            continue
        first = hits[0].source
        if seg.role is Role.IMMUTABLE:
            # Fail closed: a signed or opaque field cannot be edited, so it cannot leave.
            raise Blocked(f"a value from {first.path} (denied by {first.rule.text},"
                          f" {first.rule.where}) is inside a signed or opaque field that gate"
                          " cannot edit; start a new conversation without it")
        set_at(body, seg.path, new)
        changed.add(seg.path)
        for hit in hits:
            key = (hit.source.path, hit.source.rule.text)
            prev = found.get(key)
            found[key] = Withheld(None, None, hit.source.path, hit.source.rule.text,
                                  hit.source.rule.where, "content",
                                  prev.count + 1 if prev else 1)
    return list(found.values())


def secrets(walk: Walk, body: Any, screen: SecretScreen, policy: Policy,
            done: set[str | None], changed: set[JsonPath],
            approved: frozenset[str] = frozenset()) -> list[Withheld]:
    """Replace likely secrets with keyed, kind-tagged placeholders, as the policy says
    (`secrets:` in rule files): redact, ask (redacted unless its key is in `approved`; the
    verdict's asks say what to put to a person), block the request, or allow. A secret
    inside a signed field cannot be replaced: a high-tier one blocks; generic findings are
    too uncertain to stop a conversation for.
    """
    found: dict[tuple[str, str], Withheld] = {}
    tools = {c.id: c.name for c in walk.calls}  # which tool's output held it, if any
    for seg in _live(walk, done):
        text = get_at(body, seg.path) if seg.path in changed else seg.text
        acted = [(f, policy.secret_action(f.kind, f.rule_id, f.tier))
                 for f in screen.scanner.scan(text)]
        acted = [(f, a) for f, a in acted if a != "allow"]
        if not acted:
            continue
        if blocked := next((f for f, a in acted if a == "block"), None):
            raise Blocked(f"a likely secret ({blocked.kind}, detector {blocked.rule_id}) is in"
                          " this request and the secrets policy blocks it")
        if seg.role is Role.IMMUTABLE:
            if high := next((f for f, _ in acted if f.tier == "high"), None):
                raise Blocked(f"a likely secret ({high.kind}) is inside a signed or opaque"
                              " field that gate cannot edit; start a new conversation without it")
            continue
        out, last = [], 0
        asks: list[tuple[tuple[str, str], int, str, bool]] = []  # key, which, digest, sent
        for i, (f, action) in enumerate(acted):  # sorted, never overlapping
            value = text[f.start:f.end]
            digest = keyed_hash(value, screen.key)
            sent = action == "ask" and digest in approved
            tag = value if sent else placeholder(f, value, screen.key)
            if action == "ask" and not sent:
                tag = tag[:-1] + "; not approved by the user]"
            out += [text[last:f.start], tag]
            last = f.end
            key = (f.rule_id, digest[:16])
            prev = found.get(key)
            found[key] = Withheld(prev.call_id if prev else seg.call_id,
                                  prev.tool if prev else tools.get(seg.call_id or ""),
                                  f.kind, f.rule_id, f"tier {f.tier}: {action}", "secret",
                                  prev.count + 1 if prev else 1, key[1],
                                  prev.asked if prev else None)
            if action == "ask" and not found[key].asked:
                asks.append((key, i, digest, sent))
        out.append(text[last:])
        if asks:  # what a person is shown: the lines around it, every finding masked
            view, spans = masking.masked(text, [(f.start, f.end) for f, _ in acted])
            for key, i, digest, sent in asks:
                start, end = spans[i]
                found[key] = replace(found[key], asked=Asked(
                    digest, "send-secret", view[start:end], masking.context(view, start, end),
                    sent))
        if (new := "".join(out)) != text:  # all approved: the string is left as it was
            set_at(body, seg.path, new)
            changed.add(seg.path)
    return list(found.values())


def suspects(strings: list[tuple[JsonPath, str]], index: DeniedIndex | None,
             screen: SecretScreen | None) -> tuple[Segment, ...]:
    """Of the strings no walker knows (ids, new fields), those that hold anything: they are
    checked together in one pass, and one by one only when that pass finds something."""
    if not strings:
        return ()
    joined = "\n".join(t for _, t in strings)
    if not ((index is not None and index.find(joined))
            or (screen is not None and screen.scanner.scan(joined))):
        return ()
    return tuple(Segment(p, t, Role.ATTACHMENT) for p, t in strings
                 if (index is not None and index.find(t))
                 or (screen is not None and screen.scanner.scan(t)))


def keys(names: list[str], index: DeniedIndex | None, screen: SecretScreen | None) -> None:
    """Object keys cannot be replaced in place without changing the body's shape, so a
    denied value or a high-tier secret in a key blocks the request."""
    text = "\n".join(names)
    if index is not None and (hits := index.find(text)):
        raise Blocked(f"a value from {hits[0].source.path} is used as a JSON key in this"
                      " request; gate cannot replace it in place")
    if screen is not None and any(f.tier == "high" for f in screen.scanner.scan(text)):
        raise Blocked("a likely secret is used as a JSON key in this request; gate cannot"
                      " replace it in place")


def _live(walk: Walk, done: set[str | None]) -> list[Segment]:
    """Segments still in the body as walked (results withheld whole are gone)."""
    return [s for s in walk.segments if not (s.role is Role.TOOL_RESULT and s.call_id in done)]
