"""Content screens over every outbound string: denied files' values, and likely secrets.

Both replace in place and deterministically. A hit inside a signed or opaque field, which
gate cannot edit, blocks the request instead (fail closed).
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from gate.providers.segments import JsonPath, Role, Segment, Strings
from gate.rules.engine import Policy
from gate.rules.model import SecretAction
from gate.screen import masking
from gate.screen.fingerprints import DeniedIndex, Source
from gate.screen.secrets import Scanner, keyed_hash, load_or_create_key, placeholder
from gate.screen.verdict import Asked, Blocked, Withheld


@dataclass(frozen=True)
class SecretScreen:
    """The secret scanner, the install's placeholder key and the team's value key (team
    answers match by it on every gate of a team; None without a team key)."""

    scanner: Scanner
    key: bytes
    team: bytes | None = None

    @classmethod
    def load(cls, data_dir: Path, team: bytes | None = None) -> SecretScreen:
        return cls(Scanner(), load_or_create_key(data_dir), team)


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """One likely secret the policy acts on, in one string (never its value)."""

    kind: str
    rule_id: str
    tier: str
    action: SecretAction
    digest: str  # keyed hash of the value
    asked: Asked | None  # what a person is shown, for an `ask` finding


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """What the content screens make of one string: the text that leaves in its place, the
    denied values and secrets found in it, and why it must block the request, if it must.
    A function of the string, its role and the screens alone, so a resent string's outcome
    can be reused (gate/screen/item_cache.py, gate/screen/prefix.py)."""

    seg: Segment
    text: str
    denied: tuple[Source, ...] = ()
    secrets: tuple[Found, ...] = ()
    denied_block: str | None = None  # a denied value in a field gate cannot edit
    secret_block: str | None = None  # a secret the policy blocks, or one gate cannot edit


def outcome(
    seg: Segment,
    index: DeniedIndex | None,
    screen: SecretScreen | None,
    policy: Policy,
    approved: frozenset[str] = frozenset(),
) -> Outcome | None:
    """Every denied file's value in the string replaced, then its likely secrets replaced
    with keyed, kind-tagged placeholders as the policy says (`secrets:` in rule files):
    redact, ask (redacted unless its key is in `approved`), block, or allow. A hit inside a
    signed or opaque field cannot be replaced: a denied value or a high-tier secret blocks;
    generic findings there are too uncertain to stop a conversation for. None: nothing found.
    """
    text, denied_block = seg.text, None
    denied: tuple[Source, ...] = ()
    found: tuple[Found, ...] = ()
    if index is not None and len(index):
        new, hits = index.redact(text)
        if hits and seg.role is Role.IMMUTABLE:
            first = hits[0].source
            denied_block = (
                f"a value from {first.path} (denied by {first.rule.text},"
                f" {first.rule.where}) is inside a signed or opaque field that gate"
                " cannot edit; start a new conversation without it"
            )
        elif hits:
            text, denied = new, tuple(hit.source for hit in hits)
    secret_block = None
    if screen is not None:
        text, found, secret_block = _secrets(seg, text, screen, policy, approved)
    if not (denied or found or denied_block or secret_block):
        return None
    return Outcome(
        seg=seg,
        text=text,
        denied=denied,
        secrets=found,
        denied_block=denied_block,
        secret_block=secret_block,
    )


def _secrets(
    seg: Segment, text: str, screen: SecretScreen, policy: Policy, approved: frozenset[str]
) -> tuple[str, tuple[Found, ...], str | None]:
    acted = [
        (f, policy.secret_action(f.kind, f.rule_id, f.tier)) for f in screen.scanner.scan(text)
    ]
    acted = [(f, a) for f, a in acted if a is not SecretAction.ALLOW]
    if not acted:
        return text, (), None
    if blocked := next((f for f, a in acted if a is SecretAction.BLOCK), None):
        return (
            text,
            (),
            (
                f"a likely secret ({blocked.kind}, detector {blocked.rule_id}) is"
                " in this request and the secrets policy blocks it"
            ),
        )
    if seg.role is Role.IMMUTABLE:
        if high := next((f for f, _ in acted if f.tier == "high"), None):
            return (
                text,
                (),
                (
                    f"a likely secret ({high.kind}) is inside a signed or opaque"
                    " field that gate cannot edit; start a new conversation without"
                    " it"
                ),
            )
        return text, (), None
    view, spans = (
        masking.masked(text, [(f.start, f.end) for f, _ in acted])
        if any(a is SecretAction.ASK for _, a in acted)
        else (text, [])
    )
    out, last, found = [], 0, []
    for i, (f, action) in enumerate(acted):  # sorted, never overlapping
        value = text[f.start : f.end]
        digest = keyed_hash(value, screen.key)
        sent = action is SecretAction.ASK and digest in approved
        tag = value if sent else placeholder(f, value, screen.key)
        if action is SecretAction.ASK and not sent:
            tag = tag[:-1] + "; not approved by the user]"
        out += [text[last : f.start], tag]
        last = f.end
        asked = None
        if action is SecretAction.ASK:  # what a person is shown: the lines around it, all masked
            start, end = spans[i]
            asked = Asked(
                key=digest,
                question="send-secret",
                preview=view[start:end],
                context=masking.context(view, start, end),
                approved=sent,
                team=keyed_hash(value, screen.team) if screen.team else None,
            )
        found.append(
            Found(
                kind=f.kind,
                rule_id=f.rule_id,
                tier=f.tier,
                action=action,
                digest=digest,
                asked=asked,
            )
        )
    out.append(text[last:])
    return "".join(out), tuple(found), None


def tally(outcomes: Iterable[Outcome], tools: Mapping[str, str]) -> list[Withheld]:
    """What the outcomes withheld, counted per denied file and rule, then per secret (its
    detector and keyed hash), in order of first appearance; raises Blocked for the first
    denied value, else the first secret, that must block the request. `tools` names the
    tool whose output held a secret (call id → tool name)."""
    outcomes = list(outcomes)
    for o in outcomes:
        if o.denied_block:
            raise Blocked(o.denied_block)
    for o in outcomes:
        if o.secret_block:
            raise Blocked(o.secret_block)
    denied: dict[tuple[str, str], Withheld] = {}
    found: dict[tuple[str, str], Withheld] = {}
    for o in outcomes:
        for src in o.denied:
            key = (src.path, src.rule.text)
            prev = denied.get(key)
            denied[key] = Withheld.denied_content(
                path=src.path,
                rule=src.rule.text,
                where=src.rule.where,
                count=prev.count + 1 if prev else 1,
            )
        asks: list[tuple[tuple[str, str], Asked | None]] = []
        for f in o.secrets:
            key = (f.rule_id, f.digest[:16])
            prev = found.get(key)
            found[key] = Withheld.secret(
                detector=f.kind,
                rule_id=f.rule_id,
                where=f"tier {f.tier}: {f.action}",
                fingerprint=key[1],
                call_id=prev.call_id if prev else o.seg.call_id,
                tool=prev.tool if prev else tools.get(o.seg.call_id or ""),
                count=prev.count + 1 if prev else 1,
                asked=prev.asked if prev else None,
            )
            if f.action is SecretAction.ASK and not found[key].asked:
                asks.append((key, f.asked))
        for key, asked in asks:  # the last ask of a key in its first string, as shown
            found[key] = replace(found[key], asked=asked)
    return [*denied.values(), *found.values()]


def screened(
    segs: Iterable[Segment],
    done: Container[str | None],
    index: DeniedIndex | None,
    screen: SecretScreen | None,
    policy: Policy,
    approved: frozenset[str] = frozenset(),
) -> list[Outcome]:
    """The outcomes of the strings still in the body (a result withheld whole, its call in
    `done`, is gone), in order; strings with nothing found have none."""
    return [
        o
        for s in segs
        if not (s.role is Role.TOOL_RESULT and s.call_id in done)
        and (o := outcome(s, index, screen, policy, approved))
    ]


def unknown(
    strings: Strings,
    covered: Container[JsonPath],
    index: DeniedIndex | None,
    screen: SecretScreen | None,
) -> tuple[Segment, ...]:
    """Fail closed on what the format walker does not know in one top-level item (new
    fields, unknown blocks): its object keys are checked (Blocked), and its uncovered
    strings that hold anything are screened as attachments."""
    found, names = strings
    keys(list(names), index, screen)
    return suspects([(p, t) for p, t in found if p not in covered], index, screen)


def suspects(
    strings: list[tuple[JsonPath, str]], index: DeniedIndex | None, screen: SecretScreen | None
) -> tuple[Segment, ...]:
    """Of the strings no walker knows (ids, new fields), those that hold anything: they are
    checked together in one pass, and one by one only when that pass finds something."""
    if not strings:
        return ()
    joined = "\n".join(t for _, t in strings)
    if not (
        (index is not None and index.hits(joined))
        or (screen is not None and screen.scanner.scan(joined))
    ):
        return ()
    return tuple(
        Segment(p, t, Role.ATTACHMENT)
        for p, t in strings
        if (index is not None and index.hits(t)) or (screen is not None and screen.scanner.scan(t))
    )


def keys(names: list[str], index: DeniedIndex | None, screen: SecretScreen | None) -> None:
    """Object keys (and lists of characters or their codes, gate/providers/segments.py)
    cannot be replaced in place without changing the body's shape, so a denied value or a
    high-tier secret in one blocks the request."""
    text = "\n".join(names)
    if index is not None and (hits := index.hits(text)):
        raise Blocked(
            f"a value from {hits[0].source.path} is used as a JSON key, or spelled as a"
            " list of characters or character codes, in this request; gate cannot replace"
            " it in place"
        )
    if screen is not None and any(f.tier == "high" for f in screen.scanner.scan(text)):
        raise Blocked(
            "a likely secret is used as a JSON key, or spelled as a list of characters or"
            " character codes, in this request; gate cannot replace it in place"
        )
