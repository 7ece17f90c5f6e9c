"""Shortcuts of the generic detectors, which must never change a verdict: the checks' early
rejections (from a value's length and alphabet, before a name is built or weighed) and the
anchored walk's skip of a name that cannot be assigned."""

from __future__ import annotations

import random
import re
import string

import pytest

from gate.screen import checks, detectors
from gate.screen.detectors import Detector, _secret_span, load_detectors
from screen.secrets_corpus import realistic_text

# Letters, digits and separators of several scripts, numerics that are neither (½), and
# the symbols a value may hold.
_ALPHABETS = (
    string.ascii_lowercase,
    string.ascii_letters,
    string.digits,
    string.ascii_letters + "-_.",
    string.digits + "-_.",
    "-_.",
    string.ascii_letters + string.digits,
    string.ascii_letters + "+/=~",
    "éßΩжあ",
    "٣²½" + string.digits,
    string.printable.strip(),
)


def _values(rnd: random.Random, count: int) -> list[str]:
    out = []
    for _ in range(count):
        chars = rnd.choice(_ALPHABETS)
        out.append("".join(rnd.choices(chars, k=rnd.randrange(0, 20))))
    return out


def test_a_value_never_plausible_is_rejected_at_every_longer_minimum() -> None:
    rnd = random.Random(14)
    values = _values(rnd, 20_000)
    told = 0
    for value in values:
        for low in (6, 8, 12, 16):
            if checks._never_plausible(value, low):
                told += 1
                assert not any(checks.is_plausible_value(value, n) for n in range(low, 21)), value
    assert told > 5_000  # it does decide most short one-class values


def _candidates() -> list[tuple[Detector, re.Match[str], str]]:
    """Matches of the two generic detectors on mixed traffic and on names assigned (or
    followed by) values of every alphabet above."""
    by_id = {d.id: d for d in load_detectors()}
    rnd = random.Random(7)
    names = [
        "password",
        "DB_PASSWORD",
        "api_key",
        "token",
        "max_tokens",
        "STRIPE_KEY",
        "secret",
        "auth",
        "apiKey",
        "client_secret",
        "PWD",
        "cache_key",
        "Your API key",
    ]
    lines = []
    for value in _values(rnd, 3_000):
        name = rnd.choice(names)
        lines.append(
            rnd.choice(
                [
                    f"{name}={value}",
                    f'{name}: "{value}"',
                    f"{name} {value}",
                    f"{name} is {value}",
                    f"{name}: {value}",
                ]
            )
        )
    texts = ["\n".join(lines), realistic_text(300_000)[0]]
    out = []
    for det_id in ("generic.assignment", "generic.keyword-value"):
        det = by_id[det_id]
        for text in texts:
            for pattern in det.patterns:
                for start in range(len(text)):
                    if text[start] not in "ptasckyPTASCKY":
                        continue
                    if m := pattern.match(text, start):
                        a, b = _secret_span(m)
                        out.append((det, m, text[a:b]))
    return out


@pytest.fixture(scope="module")
def candidates() -> list[tuple[Detector, re.Match[str], str]]:
    return _candidates()


def test_the_early_rejections_change_no_verdict(
    candidates: list[tuple[Detector, re.Match[str], str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    fast = [checks.CHECKS[d.check or ""](m, v) for d, m, v in candidates]
    monkeypatch.setattr(checks, "_never_plausible", lambda value, low: False)
    full = [checks.CHECKS[d.check or ""](m, v) for d, m, v in candidates]
    assert fast == full
    assert len(candidates) > 2_000 and fast.count("keep") > 100  # both verdicts met


def test_a_name_followed_by_a_character_that_ends_it_is_not_assigned() -> None:
    """The anchored walk skips the name reader after such a character: the reader must
    say the same (no operator, nothing read), whatever stands around it."""
    for c in sorted(detectors._NOT_AFTER_NAME):
        for before in ("token", 'token"', "token'", "token`", "token ", "x.token"):
            for after in ("", "=", " = v", ':"v"', ", v", "]=v", "token=v"):
                m = detectors._NAME_ASSIGNED.match(before + c + after, len(before))
                assert m is not None and m.end() == len(before) and m.start(1) == -1, (c, before)
    for c in sorted(detectors._NOT_AFTER_BLANK):
        for before in ("token", 'token"', "'auth'", "x.token"):
            for blank in " \t":
                for after in ("", "=", " = v", ':"v"', ", v", "]=v", "tring=v", "token=v"):
                    text = before + blank + c + after
                    m = detectors._NAME_ASSIGNED.match(text, len(before))
                    assert m is not None and m.end() == len(before) and m.start(1) == -1, text
    # and the sets are not empty of what matters: `||`, `)`, `;`, `(`
    assert set("|);(") <= detectors._NOT_AFTER_NAME and set("rk(") <= detectors._NOT_AFTER_BLANK
