"""Secret detectors declared in rules/secrets/*.yaml: loaded once, errors name file:line.

A detector is a few declarative lines (stable id, kind, tier, keywords for the literal
prefilter, a regex written from the vendor's documented format, a docs link), optionally
a named check in gate/screen/checks.py. Detectors may also borrow the regexes of a
detect-secrets plugin by class name; detect-secrets' settings are never touched per scan
and nothing is verified online.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from functools import cache
from pathlib import Path
from typing import Any, overload

import yaml

from gate.errors import RuleError, compose_yaml
from gate.screen import checks, leads, wallets

SCHEMA_VERSION = 1
_TOP_KEYS = frozenset({"schemaVersion", "description", "detectors"})
_KEYS = frozenset(
    {
        "id",
        "kind",
        "tier",
        "pattern",
        "plugin",
        "keywords",
        "docs",
        "entropy",
        "check",
        "before",
        "after",
        "anchor",
        "finder",
    }
)
# A detector with finder: reads the whole string itself: none of these apply to it.
_NOT_WITH_FINDER = (
    "pattern",
    "plugin",
    "keywords",
    "check",
    "entropy",
    "before",
    "after",
    "anchor",
)
_NAME_CHARS = string.ascii_letters + string.digits + "_.-"

# After an anchored detector's keyword: the rest of the name, then (group 1, when the name
# is assigned) a closing quote, an operator; one call per name. The rest of the name is
# read possessively and stops only before a `.=` operator: what follows a name can never
# start inside it, so nothing is lost, and a long name is read once, not once per
# character it could give back.
_NAME_ASSIGNED = re.compile(
    r"""(?:[\w-]|\.(?!=))*+"""
    r"""((?:[ \t]?["'`])?\]?(?:[ \t]+(?:string|\[\]byte))?[ \t]*"""
    r"""(?:[=:?]|\.=|(?<=["'`])[ \t]*,))?"""
)
# ASCII characters that neither continue a name nor start what _NAME_ASSIGNED reads after
# it (a space or tab, a quote, `]`, an operator, a `,` after a quote): after one of these
# the name is not assigned.
_NOT_AFTER_NAME = frozenset(map(chr, range(128))) - frozenset(
    string.ascii_letters + string.digits + "_-. \t\"'`]=:?,"
)
# Nor, after one space or tab, start a quote, a type (`string`, `[]byte`), another blank,
# an operator or a `,` after a quoted name.
_NOT_AFTER_BLANK = frozenset(map(chr, range(128))) - frozenset(" \t\"'`s[=:?.,")
# Matched up to a keyword: ends where the name holding it starts (after the last character
# that cannot be in a name).
_NAME_START = re.compile(r"(?s:.*[^A-Za-z0-9_.-])?")
STOP_EVERY = 64  # matches between two looks at the caller's budget
_ID = re.compile(r"^[a-z0-9]+(?:[.-][a-z0-9]+)*$")
_FAST_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Tier(StrEnum):
    HIGH = "high"  # format-specific (checksum-verified where the format has one): ask
    LOW = "low"  # generic or contextual: redact


# A string (or a run in it) gate could not screen: held as a high-tier finding, so it
# is asked about or blocked, never passed.
UNSCREENED_KIND, UNSCREENED_ID = "unscreened", "gate.scan-budget"


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret at text[start:end]; never holds the value itself."""

    start: int
    end: int
    kind: str
    rule_id: str
    tier: Tier


@dataclass(frozen=True, slots=True)
class Detector:
    id: str
    kind: str
    tier: Tier
    patterns: Sequence[re.Pattern[str]]
    keywords: tuple[str, ...]  # lower-case literals; the prefilter folds ASCII case
    docs: str
    where: str  # file:line of the entry
    check: str | None = None
    entropy: float = 0.0  # minimum Shannon entropy of the value, bits per char
    before: int = 8  # window searched around each keyword hit
    after: int = 320
    anchor: bool = False  # match only at the start of an assigned name holding a keyword
    finder: str | None = None  # no keywords or pattern: checks.FINDERS[finder] reads it all
    glued: bool = False  # its pattern's guards were dropped (distinctive_prefix)
    loose: bool = False  # a guarded format's twin without its guards, low tier (loosened)

    @property
    def generic(self) -> bool:
        return self.check in ("assignment", "keyword")

    def find(
        self,
        view: str,
        windows: list[tuple[int, int]],
        hits: list[tuple[int, int]] | None = None,
        stop: Callable[[], bool] | None = None,
    ) -> Iterator[Finding]:
        """Matches in the prefilter's windows of `view` that pass every filter. An
        anchored detector gets the keyword hits themselves and matches once per name; given
        the hits, a pattern whose matches begin at a keyword is tried only there. `stop`
        is asked every STOP_EVERY matches; once it says so, the search ends early (the
        caller, whose budget it is, treats the string as unscreened)."""
        if self.anchor:
            matches = self._anchored(view, windows)
        elif hits is None:
            matches = (m for p in self.patterns for m in self._search(p, view, windows))
        else:
            matches = self._led(view, windows, hits)
        # Most candidates stop at the check (thousands per 2 MB for the generic detectors),
        # so the check is looked up once, not per match.
        check = checks.CHECKS[self.check] if self.check else None
        for n, m in enumerate(matches, 1):
            # Each match costs its checks (tens of microseconds); a string made of
            # candidates (`_PASS=x ` repeated) must not hold the GIL past the budget.
            if stop is not None and not n % STOP_EVERY and stop():
                return
            start, end = _secret_span(m)
            if (accepted := self._accept(m, view[start:end], end, check)) is not None:
                yield Finding(start, accepted[1], self.kind, self.id, accepted[0])

    @staticmethod
    def _search(
        pattern: re.Pattern[str], view: str, windows: list[tuple[int, int]]
    ) -> Iterator[re.Match[str]]:
        n = len(view)
        for ws, we in windows:
            for m in pattern.finditer(view, ws, we):
                if m.end() == we < n:  # the window cut the match short: redo it whole
                    m = pattern.match(view, m.start()) or m
                yield m

    def _led(
        self, view: str, windows: list[tuple[int, int]], hits: list[tuple[int, int]]
    ) -> Iterator[re.Match[str]]:
        """What `_search` finds, for patterns whose every match starts at most `before`
        characters ahead of a keyword hit (leads.py): per window, from where the last
        match ended, the leftmost match starting in [hit - before, hit] of each hit in turn
        is the leftmost match `finditer` would find next."""
        n, before = len(view), self.before
        for pattern, lead in self._leads():
            if lead is False:
                yield from self._search(pattern, view, windows)
                continue
            k, count = 0, len(hits)
            for ws, we in windows:
                pos = ws
                while k < count and hits[k][0] < we:
                    hit = hits[k][0]
                    k += 1
                    lo = hit - before if hit - before > pos else pos
                    if lo > hit:
                        continue  # inside the last match
                    if lead is not True:
                        if (first := lead.match(view, lo, we)) is None:
                            continue
                        lo = first.end()
                    if (m := pattern.match(view, lo, we)) is None:
                        continue
                    pos = m.end() if m.end() > lo else lo + 1
                    if m.end() == we < n:
                        m = pattern.match(view, m.start()) or m
                    yield m

    def _leads(self) -> Sequence[Lead]:
        if isinstance(self.patterns, Compiled):
            return self.patterns.leads(self.keywords, self.before)
        return [(p, leads.lead(p, self.keywords, self.before)) for p in self.patterns]

    def _anchored(self, view: str, hits: list[tuple[int, int]]) -> Iterator[re.Match[str]]:
        done = -1
        before, patterns = self.before, self.patterns
        name_assigned, name_start = _NAME_ASSIGNED.match, _NAME_START.match
        # Every keyword inside one name shares where the name ends and whether it is
        # assigned: a name made of keywords (`TOKENTOKEN...`) is read once, not once per
        # keyword, so the work is linear in the view.
        rest_from = rest_to = -1
        is_assigned = False
        for hit, end in hits:
            while end > hit and view[end - 1] not in _NAME_CHARS:  # `key=`, `pass"`: the
                end -= 1  # name ends before its operator or quote
            if not rest_from <= end < rest_to:
                # `token||`, `token)`, `token refreshed`: what the match would say
                after = view[end : end + 2]
                if after[:1] in _NOT_AFTER_NAME or (
                    after[:1] in " \t" and after[1:] in _NOT_AFTER_BLANK
                ):
                    is_assigned = False
                    rest_from = rest_to = end
                    continue
                rest = name_assigned(view, end)  # matches always (maybe empty)
                operator = rest.start(1) if rest else -1
                is_assigned = operator >= 0
                rest_from = end
                rest_to = operator if is_assigned else rest.end() if rest else end
            if not is_assigned:
                continue  # the name holding the keyword is not assigned a value
            while hit < end and view[hit] not in _NAME_CHARS:  # keyword like '"auth"'
                hit += 1
            named = name_start(view, hit - before if hit > before else 0, hit)
            start = named.end() if named is not None else hit
            if start <= done:
                continue  # another keyword in the same name
            done = start
            for pattern in patterns:
                if m := pattern.match(view, start):
                    yield m

    def found(self, reading: wallets.Reading) -> Iterator[Finding]:
        """A finder detector's findings: its function reads the whole string."""
        for start, end in checks.FINDERS[self.finder or ""](reading):
            yield Finding(start, end, self.kind, self.id, self.tier)

    def _accept(
        self,
        m: re.Match[str],
        value: str,
        end: int,
        check: Callable[[re.Match[str], str], checks.Verdict] | None = None,
    ) -> tuple[Tier, int] | None:
        """`find`'s filters of one match: the tier, and where the finding ends. `check`:
        the detector's check, looked up by the caller (else here)."""
        if self.glued:
            end, value = _unpadded(m, end, value)
        if not value or (self.entropy and not self._random_enough(value)):
            return None
        if check is None and self.check:
            check = checks.CHECKS[self.check]
        verdict = "keep" if check is None else check(m, value)
        if isinstance(verdict, checks.Cut):
            end, value, verdict = end - len(value) + verdict.length, value[: verdict.length], "keep"
        tier = None if verdict is None else self._settle(m, value, end, verdict)
        return None if tier is None else (tier, end)

    def _random_enough(self, value: str) -> bool:
        """The entropy floor, over the value or, for a detector that lost its guards, over
        its first 32, 48 or 64 characters: a token with a run of one character glued
        after it (`${TOKEN}aaaa...`) fell under the floor whole (23 of 108 formats hid
        behind 250 `a`)."""
        if checks.entropy(value) >= self.entropy:
            return True
        return self.glued and any(
            checks.entropy(value[:n]) >= self.entropy for n in (32, 48, 64) if n < len(value)
        )

    def _hash_in_a_word(self, view: str, start: int, end: int, value: str) -> bool:
        """A hex token glued on both sides, its hex run a digest's length: a content hash
        inside a name (`vipul-<sha256>.png` holds Pulumi's `pul-` and 40 hex digits), not
        a token. One glued to a few more digits (`_${TOKEN}9`) is still the token."""
        if not (start > 0 and end < len(view)):
            return False
        if view[start - 1] not in _NAME_CHARS or view[end] not in _HEX_DIGITS:
            return False
        body = self._after_keyword(value)
        if not body or any(c not in _HEX_DIGITS for c in body):
            return False
        run = end
        while run < len(view) and view[run] in _HEX_DIGITS:
            run += 1
        return len(body) + run - end in _DIGEST_DIGITS

    def _after_keyword(self, value: str, default: str = "") -> str:
        """What follows the keyword `value` starts with (`default` when none starts it)."""
        low = value.lower()
        return next((value[len(k) :] for k in self.keywords if low.startswith(k)), default)

    def _hex_run(self, view: str, start: int, end: int, value: str) -> bool:
        """A hex body with a hex digit glued on either side (`API-` + 32 hex digits in a
        page's URL, `4b1d` inside a digest read backwards): a longer hex string, a hash or
        an id, not the token. (A hex token glued to a hex digit is not told from one.)"""
        body = self._after_keyword(value)
        if not body or any(c not in _HEX_DIGITS for c in body):
            return False
        return (start > 0 and view[start - 1] in _HEX_DIGITS) or (
            end < len(view) and view[end] in _HEX_DIGITS
        )

    def _word_like(self, value: str) -> bool:
        """A body whose letters are words: of letters alone in one case, or with lower-case
        runs of a word's length on average (`hf_requiredCharacteristicTypes...`, and with
        digits, `isSuspiciousTransactionDetectedForAccount2`): an identifier, not a
        random token (random mixed case has runs of about 2)."""
        body = self._after_keyword(value, value)
        if body.isalpha() and (body.isupper() or body.islower()):
            return True  # `ASIAASACKOFRICE...`, `API-VIRHEKAPSELO...`
        if body.lower() == body:
            return False  # lower case and digits (base36, hex): runs tell nothing
        runs = [len(r) for r in _LOWER_RUNS.findall(body)]
        return len(runs) > 1 and sum(runs) >= _WORD_LETTERS and sum(runs) / len(runs) >= _WORD_RUN

    def _settle(
        self, m: re.Match[str], value: str, end: int, verdict: checks.Verdict
    ) -> Tier | None:
        """The filters after a check that kept the value, and the tier."""
        name = (m.group("name") or "").lower() if "name" in m.re.groupindex else ""
        password = "pass" in name or "pwd" in name  # not `secret`: `"<key>%s"` is code
        if checks.is_example(value) or checks.is_placeholder(value, password):
            return None
        if checks.is_masked(m, end):
            return None
        if self.glued and (
            _inside_a_run(m.string, end - len(value), end)
            or self._hash_in_a_word(m.string, end - len(value), end, value)
        ):
            return None
        if self.loose and (
            _long_glue(m.string, end - len(value), end)
            or self._word_like(value)
            or self._hex_run(m.string, end - len(value), end, value)
        ):
            return None
        if verdict == "demote" or (
            self.tier is Tier.HIGH and verdict != "structure" and checks.is_made_up(value)
        ):
            return Tier.LOW
        return self.tier


# A pattern and what leads.lead says of it for its detector.
Lead = tuple[re.Pattern[str], re.Pattern[str] | bool]


class Compiled(Sequence[re.Pattern[str]]):
    """A detector's regexes. A shipped detector's are compiled on first use (`lazy`):
    compiling all of them was a third of `gate scan`'s start-up, and a scan uses the few
    whose keywords it meets. The tests compile every shipped pattern; one that would not
    compile is still an error naming its file:line (and the string that met it is not
    screened: fail closed). Other files' patterns are compiled when they load."""

    __slots__ = ("_compiled", "_leads", "_sources", "_where")

    def __init__(self, sources: tuple[str, ...], where: str, *, lazy: bool = True):
        self._sources = sources
        self._where = where
        self._compiled: tuple[re.Pattern[str], ...] | None = None
        self._leads: tuple[tuple[tuple[str, ...], int], list[Lead]] | None = None
        if not lazy:
            self._all()

    @property
    def sources(self) -> tuple[str, ...]:
        return self._sources

    def leads(self, keywords: tuple[str, ...], before: int) -> list[Lead]:
        """Each pattern with `leads.lead` of it, kept here: the lookup by pattern hashes
        its compiled code, a microsecond or two per detector per string."""
        key = (keywords, before)
        if self._leads is None or self._leads[0] != key:
            self._leads = (key, [(p, leads.lead(p, keywords, before)) for p in self._all()])
        return self._leads[1]

    def _all(self) -> tuple[re.Pattern[str], ...]:
        if self._compiled is None:  # two threads may both compile: the same patterns
            try:
                self._compiled = tuple(re.compile(s) for s in self._sources)
            except re.error as exc:
                raise RuleError(f"pattern: {exc}", where=self._where) from exc
        return self._compiled

    @overload
    def __getitem__(self, i: int) -> re.Pattern[str]: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[re.Pattern[str]]: ...
    def __getitem__(self, i: int | slice) -> re.Pattern[str] | Sequence[re.Pattern[str]]:
        return self._all()[i]

    def __iter__(self) -> Iterator[re.Pattern[str]]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._sources)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Compiled):
            return self._sources == other._sources
        return tuple(self) == other

    def __hash__(self) -> int:
        return hash(self._sources)

    def __repr__(self) -> str:
        return f"Compiled({self._sources!r})"


def _secret_span(m: re.Match[str]) -> tuple[int, int]:
    """The `secret` group, else the first group that matched (detect-secrets' convention
    for its denylist regexes), else the whole match."""
    try:  # (one call: asking groupindex first made a mapping proxy per match)
        span = m.span("secret")
    except IndexError:  # no such group: three shipped patterns
        pass
    else:
        if span[0] >= 0:
            return span
    for i in range(1, (m.re.groups or 0) + 1):
        if m.group(i):
            return m.span(i)
    return m.span()


def secrets_dir() -> Path:
    """Shipped detectors: `rules/secrets` in a checkout, `gate/_packs/secrets` in a wheel."""
    here = Path(__file__).resolve().parent.parent
    for candidate in (here.parent / "rules" / "secrets", here / "_packs" / "secrets"):
        if candidate.is_dir() and any(candidate.glob("*.yaml")):
            return candidate
    raise FileNotFoundError("gate's shipped secret detectors are missing: reinstall gate")


def load_detectors(directory: Path | None = None) -> tuple[Detector, ...]:
    """Every detector of every *.yaml in `directory` (default: the shipped ones)."""
    shipped = directory is None
    directory = directory or secrets_dir()
    files = sorted(directory.glob("*.yaml"))
    detectors: list[Detector] = []
    seen: dict[str, str] = {}
    for path in files:
        name = f"rules/secrets/{path.name}" if shipped else str(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise RuleError(f"cannot read secret detectors: {exc}", where=name) from exc
        for det in load_text(text, name, lazy=shipped):
            if det.id in seen:
                raise RuleError(
                    f"detector id {det.id!r} is already used at {seen[det.id]}",
                    where=det.where,
                    hint="ids are public: pick a new one",
                )
            seen[det.id] = det.where
            detectors.append(det)
    if not detectors:
        # An empty policy is an error, never "allow everything".
        raise RuleError(
            "no secret detectors found",
            where=str(directory),
            hint="reinstall gate, or add detectors: entries to a *.yaml there",
        )
    return tuple(detectors)


def load_text(text: str, name: str, *, lazy: bool = False) -> list[Detector]:
    """The detectors of one file; `lazy`: patterns compiled on first use (shipped
    files, whose patterns the tests compile), else here, so an error names file:line."""
    try:  # libyaml composes the same nodes (with line marks) 20x faster: gate scan's start-up
        doc = yaml.compose(text, Loader=_FAST_LOADER)
    except yaml.YAMLError:
        doc = compose_yaml(text, name)  # the error, named file:line
    if not isinstance(doc, yaml.MappingNode):
        raise RuleError("expected a mapping with detectors:", where=name)
    entries: list[Detector] = []
    for key, value in doc.value:
        if key.value not in _TOP_KEYS:
            raise RuleError(
                f"unknown key {key.value!r}",
                where=_at(name, key),
                hint="use schemaVersion:, description: or detectors:",
            )
        if key.value == "schemaVersion" and value.value != str(SCHEMA_VERSION):
            raise RuleError(
                f"schemaVersion {value.value} is not supported (this gate reads {SCHEMA_VERSION})",
                where=_at(name, value),
            )
        if key.value == "detectors":
            if not isinstance(value, yaml.SequenceNode):
                raise RuleError("detectors: must be a list", where=_at(name, value))
            entries += [_entry(item, name, lazy) for item in value.value]
    return entries


def _entry(node: yaml.Node, name: str, lazy: bool = False) -> Detector:
    where = _at(name, node)
    if not isinstance(node, yaml.MappingNode):
        raise RuleError("a detector must be a mapping (id:, kind:, tier:, ...)", where=where)
    nodes = {k.value: v for k, v in node.value}
    for key in node.value:
        if key[0].value not in _KEYS:
            raise RuleError(
                f"unknown key {key[0].value!r} in a detector",
                where=_at(name, key[0]),
                hint="keys: " + ", ".join(sorted(_KEYS)),
            )
    if "finder" in nodes:
        return _finder_entry(nodes, name, where)
    for req in ("id", "kind", "tier", "keywords", "docs"):
        if req not in nodes:
            raise RuleError(f"detector has no {req}:", where=where)
    fields = {k: _scalar(v, k, name) for k, v in nodes.items() if k != "keywords"}
    _common(fields, nodes, name)
    if ("pattern" in fields) == ("plugin" in fields):
        raise RuleError("a detector has either pattern: or plugin:", where=where)
    if "check" in fields and fields["check"] not in checks.CHECKS:
        raise RuleError(
            f"unknown check {fields['check']!r}",
            where=_at(name, nodes["check"]),
            hint="checks: " + ", ".join(sorted(checks.CHECKS)),
        )
    keywords = _keywords(nodes["keywords"], name)
    glued = fields["tier"] == Tier.HIGH.value and distinctive_prefix(keywords)
    if glued and "pattern" in fields:
        fields = {**fields, "pattern": unguarded(fields["pattern"])}
    return Detector(
        id=fields["id"],
        kind=fields["kind"],
        tier=Tier(fields["tier"]),
        patterns=_patterns(fields, nodes, name, lazy),
        keywords=keywords,
        docs=fields["docs"],
        where=where,
        check=fields.get("check"),
        entropy=_number(fields, nodes, "entropy", name, 0.0),
        before=int(_number(fields, nodes, "before", name, 8)),
        after=int(_number(fields, nodes, "after", name, 320)),
        anchor=_anchor(fields, nodes, name),
        glued=glued and "pattern" in fields,
    )


# A token glued to the word before it (`backup_ghp_...`, `x$(cat token)`, `9sk-ant-...`) is
# still the token when its prefix says so. A high-tier pattern's leading guard ("not after
# a word character", written to keep a short prefix inside a longer word from matching)
# is dropped when every keyword is distinctive: 4+ characters with a `_`, `-` or `.` in
# them (`ghp_`, `sk-ant-`, `xoxb-`, `glpat-`, `hvs.`), and so is its closing guard (a
# token with text glued after it: `${TOKEN}x`). Prefixes of letters and digits alone (`AKIA`,
# `AIza`, ClickHouse's `4b1d`) keep it: hex dumps and base64 hold them by chance.
_GUARD = re.compile(r"(\(\?[aiLmsux]+\))?\(\?<!(?:\[(?:\\.|[^\]\\])+\]|\\[dw])\)")
_CLOSING = re.compile(r"\(\?!(?:\[(?:\\.|[^\]\\])+\]|\\[dw])\)\Z")


# A keyword's first word that ordinary words and names end in or hold (`GSSAPI-`,
# `client_secret_`, `my-private-key:`): its guard stays.
_GENERIC_HEADS = frozenset({"api", "secret", "private", "access", "login", "key", "token"})


def distinctive_prefix(keywords: Sequence[str]) -> bool:
    """Whether every keyword is a vendor's own prefix: 4+ characters with a `_`, `-` or `.`
    in them, whose first word is no ordinary word (`api-` is not one)."""
    return bool(keywords) and all(
        len(k) >= 4
        and ("_" in k or "-" in k or "." in k)
        and (head := _first_word(k))
        and head not in _GENERIC_HEADS
        for k in keywords
    )


_HEX_DIGITS = frozenset(string.hexdigits)
_RUN_CHARS = frozenset(string.ascii_letters + string.digits + "_-+/=")
_RUN_SIDE = 16  # token characters on both sides of a glued match: inside a longer run
_RUN_VARIED = 6  # different characters in 16 random ones: 14 on average
_PAD = 8  # one character repeated this often at a glued match's end is padding


def _unpadded(m: re.Match[str], end: int, value: str) -> tuple[int, str]:
    """A match that lost its guards without the run of one character glued after the
    token (`${TOKEN}aaaa...`, `000...`), if the pattern still takes what is left: the run
    made it a placeholder to the checks, and 23 to 29 of 108 formats hid behind one.
    With where it then ends."""
    last = value[-1:]
    kept = value.rstrip(last) if last else value
    if len(value) - len(kept) < _PAD:
        return end, value
    cut = end - (len(value) - len(kept))
    again = m.re.match(m.string, m.start(), cut)
    if again is None or _secret_span(again)[1] != cut:
        return end, value  # too short for the format without it (`sk_live_12xxxx...`)
    return cut, kept


_LOOSE_KEYWORD = 3  # a shorter keyword sits in random text by chance: no loosened twin
_WRAP_WIDTHS = frozenset({60, 64, 76})  # what `xxd -p`, PEM and `base64` wrap at
_WRAP_LOOK = 80  # characters of a line read beside a break to tell a wrapped blob
_WORD_LETTERS = 8  # lower-case letters in a body before its runs tell words
_GLUE_MAX = 12  # token characters glued on one side of a loosened match: a word, a date
_LOWER_RUNS = re.compile(r"[a-z]+")
_WORD_RUN = 4.0  # lower-case letters in a row, on average: random mixed case has about 2


def _long_glue(view: str, start: int, end: int) -> bool:
    """Whether a loosened match has more than 12 token characters glued on either side,
    of more than two different ones (padding of one character is no blob): a base64 blob
    or a long name holds a short prefix by chance (`=` counts: base64's padding sits inside
    a blob of joined ones, so `LONG_NAME=x${KEY}` is read as one run too). A line break
    goes on with the run only where the
    match's line and the next are token characters through (wrapped base64 and hex: 76
    characters a line hold a whole token and a few glued on), not into a neighbour's
    words (`${TOKEN}_old` then `WORKDIR=/srv`)."""
    for lo, hi, step in ((start - 1, -1, -1), (end, len(view), 1)):
        seen: set[str] = set()
        n, i = 0, lo
        while i != hi:
            c = view[i]
            if c in _RUN_CHARS:
                seen.add(c)
                n += 1
                if n > _GLUE_MAX and len(seen) > 2:
                    return True
            elif c not in "\r\n" or not n or not _wrapped(view, i, step):
                break  # (a break right at the match is no wrapped run)
            i += step
    return False


def _wrapped(view: str, at: int, step: int) -> bool:
    """Whether the lines on both sides of the line break reached at `at` hold token
    characters only (as far as 80 characters from the break: a wrapped blob's line)."""
    nl = view.rfind("\n", max(0, at - 1), at + 1) if step > 0 else view.find("\n", at, at + 2)
    if nl == -1:
        return False
    before = view[max(0, nl - _WRAP_LOOK) : nl].rstrip("\r")
    before = before[before.rfind("\n") + 1 :]
    after = view[nl + 1 : nl + 1 + _WRAP_LOOK]
    after = after.split("\n", 1)[0].rstrip("\r")
    # The line above the break is a whole line of a wrap (`base64` 76, PEM 64, `xxd -p`
    # 60 characters; 80 read: a longer one), not a token and its glue (under 60).
    full = len(before) in _WRAP_WIDTHS or len(before) >= _WRAP_LOOK
    return full and bool(after) and _RUN_CHARS.issuperset(before + after)


@cache  # per detector, once per process: its sources are rewritten by regex
def loosened(det: Detector) -> Detector | None:
    """A guarded high-tier format's twin with its guards dropped, at the low tier: the
    token with a character glued to it (`x${TOKEN}`, `${TOKEN}_old`) is redacted, not
    asked about (its short prefix sits in words and blobs by chance)."""
    if det.tier is not Tier.HIGH or det.glued or det.finder or det.anchor:
        return None
    if any(len(k) < _LOOSE_KEYWORD for k in det.keywords):
        return None  # Entra's `Q~`: random base64 with `~` (Freenet's keys) holds it
    if not isinstance(det.patterns, Compiled):
        return None
    sources = det.patterns.sources
    loose = tuple(unguarded(s) for s in sources)
    if loose == sources:
        return None
    return replace(det, tier=Tier.LOW, patterns=Compiled(loose, det.where), glued=True, loose=True)


def _inside_a_run(view: str, start: int, end: int) -> bool:
    """Whether a match that lost its guards sits inside a long run of token characters,
    16 or more on both sides (a base64url blob holds `ghp_`, `sp_r`... and a body by
    chance: random base64url had 8 high-tier findings in 4 MB, read forwards and
    backwards, with the guards gone); a token glued to a few characters, or to a run of
    few different ones, is not."""
    if start < _RUN_SIDE or end + _RUN_SIDE > len(view):
        return False
    sides = (view[start - _RUN_SIDE : start], view[end : end + _RUN_SIDE])
    # Random characters on both sides: padding of a few (`aaaa...${TOKEN}aaaa...`, which
    # hid every glued format) is no blob.
    return all(_RUN_CHARS.issuperset(side) and len(set(side)) >= _RUN_VARIED for side in sides)


_DIGEST_DIGITS = frozenset({32, 40, 56, 64, 96, 128})  # MD5, SHA-1, SHA-2 in hex


def _first_word(keyword: str) -> str:
    """`keyword` up to its first `_`, `-` or `.` (no regex: the scanner asks this of every
    detector as it starts)."""
    cut = min((at for sep in "_-." if (at := keyword.find(sep)) != -1), default=len(keyword))
    return keyword[:cut]


def unguarded(source: str) -> str:
    """`source` without its leading lookbehind guard (flags kept) and its closing lookahead
    guard, where it has them."""
    m = _GUARD.match(source)
    if m is not None:
        source = (m.group(1) or "") + source[m.end() :]
    end = _CLOSING.search(source)
    return source if end is None else source[: end.start()]


def _common(fields: dict[str, str], nodes: dict[str, yaml.Node], name: str) -> None:
    """What every detector needs: an id and kind of the public form, a tier, a docs link."""
    for key in ("id", "kind"):
        if not _ID.match(fields[key]):
            raise RuleError(
                f"{key}: {fields[key]!r} must be lower-case words joined by . or -",
                where=_at(name, nodes[key]),
            )
    if fields["tier"] not in {t.value for t in Tier}:
        raise RuleError("tier: must be high or low", where=_at(name, nodes["tier"]))
    if not fields["docs"].startswith("https://"):
        raise RuleError(
            "docs: must link the format's documentation (https://...)",
            where=_at(name, nodes["docs"]),
        )


def _finder_entry(nodes: dict[str, yaml.Node], name: str, where: str) -> Detector:
    """A detector with no keyword: `finder:` names a function of checks.FINDERS."""
    for req in ("id", "kind", "tier", "docs"):
        if req not in nodes:
            raise RuleError(f"detector has no {req}:", where=where)
    for key in _NOT_WITH_FINDER:
        if key in nodes:
            raise RuleError(
                f"a detector with finder: has no {key}:",
                where=_at(name, nodes[key]),
                hint="its function reads the whole string and verifies what it finds",
            )
    fields = {k: _scalar(v, k, name) for k, v in nodes.items()}
    _common(fields, nodes, name)
    if fields["finder"] not in checks.FINDERS:
        raise RuleError(
            f"unknown finder {fields['finder']!r}",
            where=_at(name, nodes["finder"]),
            hint="finders: " + ", ".join(sorted(checks.FINDERS)),
        )
    return Detector(
        id=fields["id"],
        kind=fields["kind"],
        tier=Tier(fields["tier"]),
        patterns=(),
        keywords=(),
        docs=fields["docs"],
        where=where,
        finder=fields["finder"],
    )


def _anchor(fields: dict[str, str], nodes: dict[str, yaml.Node], name: str) -> bool:
    if fields.get("anchor", "name") != "name":
        raise RuleError("anchor: can only be name", where=_at(name, nodes["anchor"]))
    return "anchor" in fields


def _patterns(
    fields: dict[str, str], nodes: dict[str, yaml.Node], name: str, lazy: bool = False
) -> Sequence[re.Pattern[str]]:
    if "plugin" in fields:
        denylist = _plugin_denylists().get(fields["plugin"])
        if denylist is None:
            raise RuleError(
                f"detect-secrets has no regex plugin {fields['plugin']!r}",
                where=_at(name, nodes["plugin"]),
            )
        return denylist
    return Compiled((fields["pattern"],), _at(name, nodes["pattern"]), lazy=lazy)


@cache
def _plugin_denylists() -> dict[str, tuple[re.Pattern[str], ...]]:
    """The regexes of detect-secrets' regex plugins by class name, looked up once per
    process. Only the class attributes are read: its global settings are left alone."""
    # Imported here: detect-secrets loads all of itself (and requests) on any import.
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    plugins: list[Any] = list(get_mapping_from_secret_type_to_class().values())
    return {
        c.__name__: tuple(c.denylist)
        for c in plugins
        if isinstance(getattr(c, "denylist", None), list | tuple)
    }


def _keywords(node: yaml.Node, name: str) -> tuple[str, ...]:
    if (
        not isinstance(node, yaml.SequenceNode)
        or not node.value
        or not all(
            isinstance(n, yaml.ScalarNode) and n.value and n.value.isascii() for n in node.value
        )
    ):
        raise RuleError(
            "keywords: must be a non-empty list of ASCII literals",
            where=_at(name, node),
            hint="keywords: [ghp_, gho_]",
        )
    return tuple(n.value.lower() for n in node.value)


def _scalar(node: yaml.Node, key: str, name: str) -> str:
    if not isinstance(node, yaml.ScalarNode) or not str(node.value).strip():
        raise RuleError(f"{key}: must be a non-empty string", where=_at(name, node))
    return str(node.value)


def _number(
    fields: dict[str, str], nodes: dict[str, yaml.Node], key: str, name: str, default: float
) -> float:
    if key not in fields:
        return default
    try:
        value = float(fields[key])
    except ValueError:
        value = -1.0
    if value < 0:
        raise RuleError(f"{key}: must be a number >= 0", where=_at(name, nodes[key]))
    return value


def _at(name: str, node: yaml.Node) -> str:
    return f"{name}:{node.start_mark.line + 1}"
