"""Other scanners' labelled examples, read at run time from their git repositories.

gitleaks and betterleaks write each rule's true and false positives as Go expressions
(`utils.GenerateSampleSecrets("airtable", secrets.NewSecret(utils.AlphaNumeric("17")))`):
a small evaluator of that subset of Go builds them here, with random bodies generated
from the regexes they name. kingfisher lists `examples:` and `negative_examples:` in YAML.
trufflehog's detector tests give each pattern test an `input` and what it `want`s.
Nothing read here is stored in gate's repository: the repositories stay in a cache.
"""

from __future__ import annotations

import math
import random
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from re import _constants as C
from re import _parser as sre

import yaml

SOURCES = {  # name: (GitHub repository, folder of rules or tests)
    "gitleaks": ("gitleaks/gitleaks", "cmd/generate/config/rules"),
    "betterleaks": ("betterleaks/betterleaks", "cmd/generate/config/rules"),
    "kingfisher": ("mongodb/kingfisher", "data/rules"),
    "trufflehog": ("trufflesecurity/trufflehog", "pkg/detectors"),
}


@dataclass(frozen=True)
class Example:
    source: str
    rule: str
    text: str
    positive: bool
    distinctive: bool  # the rule's secret starts with a fixed prefix of 3+ characters
    # A false-positive example that another, vendor-specific rule of the same scanner
    # matches (its regex, run here): the text holds that other vendor's token. None where
    # the scanner's rules are not regexes read here (trufflehog's are Go code).
    other_rule: bool | None = None
    # Of those, one whose secret starts with a fixed prefix of 3+ characters matches: the
    # text holds a token of that vendor's distinctive format (`sgp_...` given as a
    # negative of the Segment rule), which the scanner itself reports under that rule.
    other_sharp: bool = False

    @property
    def stand_in(self) -> bool:
        """The example's value is a stand-in, neither a secret nor a harmless value: ten
        characters of the alphabet or the digits in order (`abcdefghij`, `1234567890`),
        the RFC 4122 sample UUID, or one letter or digit twenty times (not a run of spaces,
        `=` or `#`: text around a real value holds those). Hand-written examples use
        them for either label (`API_SECRET=abcdefghijklmnopqrstuvwxyz123456` is a false
        positive of one rule, `simfinKEY=abcdefghijklmnopqrstuvwxyz123456` a true positive
        of another); no scanner can be right on both, so they measure nothing and are set
        aside, whichever their label. Generated bodies hold such runs about never."""
        return bool(_STAND_IN.search(self.text))


_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
_STAND_IN = re.compile(
    "|".join(_ALPHABET[i : i + 10] for i in range(17))
    + "|0123456789|1234567890|123e4567-e89b-12d3-a456-426614174000|([A-Za-z0-9])\\1{19}",
    re.IGNORECASE,
)


class Unknown(Exception):
    """An expression outside the evaluated subset of Go: its example is skipped."""


def git_files(repo: Path, folder: str, suffix: str) -> Iterator[tuple[str, str]]:
    names = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "-r", "--name-only", "HEAD", folder],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in names:
        if name.endswith(suffix):
            text = subprocess.run(
                ["git", "-C", str(repo), "show", f"HEAD:{name}"],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            yield name, text


# --- random strings from a regex (what Go's reggen does for gitleaks' tests) ---------------

_POSIX = {
    "[:alnum:]": "a-zA-Z0-9",
    "[:alpha:]": "a-zA-Z",
    "[:digit:]": "0-9",
    "[:upper:]": "A-Z",
    "[:lower:]": "a-z",
    "[:xdigit:]": "0-9a-fA-F",
    "[:word:]": "\\w",
    "[:space:]": "\\s",
    "[:punct:]": "!-/:-@\\[-`{-~",
}
_PRINTABLE = [chr(c) for c in range(33, 127)]
_CATEGORY = {
    C.CATEGORY_DIGIT: "0123456789",
    C.CATEGORY_SPACE: " ",
    C.CATEGORY_WORD: "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_",
}


def python_regex(pattern: str) -> str:
    for posix, plain in _POSIX.items():
        pattern = pattern.replace(posix, plain)
    return pattern.replace("\\z", "\\Z").replace("(?P<", "(?P<").replace("\\Q", "")


def generate(pattern: str, rng: random.Random) -> str:
    try:
        tree = sre.parse(python_regex(pattern))
    except (re.error, ValueError, OverflowError) as exc:
        raise Unknown(f"regex {pattern!r}: {exc}") from exc
    return "".join(_gen(tree, rng))


def _gen(items: object, rng: random.Random) -> Iterator[str]:
    for op, av in items:  # type: ignore[attr-defined]
        if op is C.LITERAL:
            yield chr(av)
        elif op is C.ANY:
            yield rng.choice(_PRINTABLE)
        elif op is C.IN:
            yield rng.choice(_class(av))
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, sub = av
            hi = min(hi, lo + 8) if hi is not C.MAXREPEAT else lo + 8
            for _ in range(rng.randint(lo, hi) if lo != hi else lo):
                yield from _gen(sub, rng)
        elif op is C.SUBPATTERN:
            yield from _gen(av[-1], rng)
        elif op is C.ATOMIC_GROUP:
            yield from _gen(av, rng)
        elif op is C.BRANCH:
            yield from _gen(rng.choice(av[1]), rng)
        elif op is C.NOT_LITERAL:
            yield rng.choice([c for c in _PRINTABLE if ord(c) != av])
        # AT (anchors), ASSERT, ASSERT_NOT, GROUPREF: nothing to emit


def _class(items: list[tuple[object, object]]) -> list[str]:
    chars: set[str] = set()
    negate = False
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            chars.add(chr(av))  # type: ignore[arg-type]
        elif op is C.RANGE:
            lo, hi = av  # type: ignore[misc]
            chars.update(chr(c) for c in range(lo, min(hi, lo + 200) + 1))
        elif op is C.CATEGORY:
            chars.update(_CATEGORY.get(av, ""))  # type: ignore[call-overload]
    if negate:
        return [c for c in _PRINTABLE if c not in chars] or ["x"]
    return sorted(chars) or ["x"]


def entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def distinctive(pattern: str) -> bool:
    """The secret (first capture group, else the whole pattern) begins with a literal of
    3+ characters, or with alternatives that all do (AKIA|ASIA)."""
    try:
        tree = sre.parse(python_regex(pattern))
    except (re.error, ValueError, OverflowError):
        return False
    group = _first_group(list(tree))
    return _prefix_len(group if group is not None else list(tree)) >= 3


def _first_group(items: list[tuple[object, object]]) -> list[tuple[object, object]] | None:
    for op, av in items:
        if op is C.SUBPATTERN and av[0] is not None:  # type: ignore[index]
            return list(av[-1])  # type: ignore[index]
        subs: list[object] = []
        if op is C.SUBPATTERN:
            subs = [av[-1]]  # type: ignore[index]
        elif op is C.BRANCH:
            subs = list(av[1])  # type: ignore[index]
        elif op in (C.MAX_REPEAT, C.MIN_REPEAT):
            subs = [av[2]]  # type: ignore[index]
        for sub in subs:
            if (found := _first_group(list(sub))) is not None:  # type: ignore[call-overload]
                return found
    return None


def _prefix_len(items: list[tuple[object, object]]) -> int:
    n = 0
    for op, av in items:
        if op is C.LITERAL:
            n += 1
        elif op is C.AT:
            continue
        elif op is C.SUBPATTERN and av[0] is None:  # type: ignore[index]
            return n + _prefix_len(list(av[-1]))  # type: ignore[index]
        elif op is C.BRANCH:
            return n + min(_prefix_len(list(b)) for b in av[1])  # type: ignore[index]
        elif op is C.IN and len(av) == 2 and av[0][0] is C.LITERAL:  # type: ignore[index]
            n += 1  # [Aa]: a case-folded literal
        else:
            return n
    return n


def from_source(name: str, repo: Path, seed: int = 14) -> tuple[list[Example], int]:
    """The labelled examples of one scanner, and how many it had that could not be read."""
    from goexpr import rules  # the Go evaluator imports this module's generator

    rng = random.Random(seed)
    folder = SOURCES[name][1]
    out: list[Example] = []
    skipped = 0
    patterns: dict[str, str] = {}
    if name == "kingfisher":
        for _, text in git_files(repo, folder, ".yml"):
            for rule in (yaml.safe_load(text) or {}).get("rules", []):
                if rule.get("visible") is False:
                    # A component another rule depends on (a host name, an account id,
                    # an email: `visible: false`): kingfisher never reports it alone,
                    # and its examples are not secrets.
                    continue
                patterns[rule["id"]] = rule.get("pattern", "")
                sharp = distinctive(rule.get("pattern", ""))
                for key, positive in (("examples", True), ("negative_examples", False)):
                    out += [
                        Example(name, rule["id"], str(e), positive, sharp)
                        for e in rule.get(key) or []
                    ]
        return _mark_other_rules(out, patterns), skipped
    if name == "trufflehog":
        for path, text in git_files(repo, folder, "_test.go"):
            if path.endswith("_integration_test.go"):
                continue
            for rule in _test_rules(text, rng):
                skipped += rule.skipped
                out += [Example(name, path.split("/")[2], i, want, False) for i, want in rule.cases]
        return out, skipped
    for _, text in git_files(repo, folder, ".go"):
        for rule in rules(text, rng):
            skipped += rule.skipped
            if not rule.reported:
                # `SkipReport: true`: a component another rule requires (an instance
                # host, a tenant id, a cloud name); never reported alone, not a secret.
                continue
            patterns[rule.rule_id] = rule.regex
            sharp = distinctive(rule.regex)
            out += [Example(name, rule.rule_id, t, True, sharp) for t in rule.tps]
            out += [Example(name, rule.rule_id, t, False, sharp) for t in rule.fps]
    return _mark_other_rules(out, patterns), skipped


_GLOBAL_FLAGS = re.compile(r"\(\?([aiLmsux]+)\)")


def compile_go(pattern: str) -> re.Pattern[str] | None:
    """A Go/Rust regex in Python's dialect (inline flags moved to the front), or None."""
    flags = "".join(sorted(set("".join(_GLOBAL_FLAGS.findall(pattern)))))
    body = _GLOBAL_FLAGS.sub("", python_regex(pattern))
    try:
        return re.compile((f"(?{flags})" if flags else "") + body)
    except (re.error, ValueError, OverflowError):
        return None


def _mark_other_rules(examples: list[Example], patterns: dict[str, str]) -> list[Example]:
    """Mark the false-positive examples that another rule's regex matches. Generic rules
    (ids with `generic`: name-and-entropy rules) are left out: they match most values
    under a secret's name, and their own allowlists, not run here, decide."""
    compiled = {
        rid: c
        for rid, p in patterns.items()
        if "generic" not in rid and p and (c := compile_go(p)) is not None
    }
    sharp = {rid for rid in compiled if distinctive(patterns[rid])}
    out = []
    for e in examples:
        if not e.positive:
            others = {rid for rid, c in compiled.items() if rid != e.rule and c.search(e.text)}
            e = Example(
                e.source,
                e.rule,
                e.text,
                e.positive,
                e.distinctive,
                other_rule=bool(others),
                other_sharp=bool(others & sharp),
            )
        out.append(e)
    return out


def _test_rules(text: str, rng: random.Random) -> list[object]:
    from goexpr import Evaluator, tokens

    return [Evaluator(tokens(text), rng).run()]
