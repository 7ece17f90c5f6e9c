"""Long runs with no spaces (an alphabet, a keyword repeated, keywords glued to operators)
cost the scanner work linear in their length: counted in regex calls, never timed."""

from __future__ import annotations

import random
import re
import sys
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

import pytest

from gate.screen import detectors, hidden
from gate.screen.detectors import STOP_EVERY, Detector
from gate.screen.secrets import UNSCREENED_ID, Scanner
from screen.secrets_corpus import Gen, negatives, positives

MILLION = 1_000_000


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def _run(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


@contextmanager
def regex_calls() -> Iterator[Counter[re.Pattern[str]]]:
    """Every call of a compiled pattern's method made while the block runs, by pattern
    (the profiler sees C calls, so no part of gate is replaced)."""
    calls: Counter[re.Pattern[str]] = Counter()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_call" and isinstance(owner := getattr(arg, "__self__", None), re.Pattern):
            calls[owner] += 1

    sys.setprofile(profile)
    try:
        yield calls
    finally:
        sys.setprofile(None)


def test_a_million_character_name_of_keywords_is_read_once(scanner: Scanner) -> None:
    """`TOKEN` 200,000 times is one name holding 200,000 keyword hits: the anchored walk
    reads where that name ends once per view (the text, and the base64 layer the run also
    decodes as), not once per hit (each such read ran to the end of the name: quadratic,
    23 s of CPU at 30K characters)."""
    text = _run("TOKEN", MILLION)
    with regex_calls() as calls:
        found = Scanner(scanner.detectors).scan(text)
    assert found == []
    assert calls[detectors._NAME_ASSIGNED] <= 1 + hidden.LAYERS


@pytest.mark.parametrize(
    "unit", ["TOKEN", "_PASS= ", "PASSW_", "cookie= ", "KEY-", "AKIA", "A", "0123456789abcdef"]
)
def test_regex_calls_grow_with_keyword_hits_not_with_their_product(
    scanner: Scanner, unit: str
) -> None:
    """Each keyword hit is tried a bounded number of times, whatever the length: the calls
    on a long run stay within a few per hit."""
    text = _run(unit, MILLION // 10)
    hits = sum(len(h) for h in scanner._find_keywords(text).hits.values())
    with regex_calls() as calls:
        found = Scanner(scanner.detectors, budget=1e9).scan(text)
    assert all(f.rule_id != UNSCREENED_ID for f in found)
    assert sum(calls.values()) <= 8 * hits + 64


def test_a_string_of_candidates_asks_for_the_budget_as_it_goes(scanner: Scanner) -> None:
    """`_PASS=<value> ` repeated is a real assignment every few characters, each costing
    its checks: the detector asks its caller's budget every STOP_EVERY matches and stops as
    soon as it is told, instead of holding the GIL to the end of the string."""
    (det,) = [d for d in scanner.detectors if d.id == "generic.assignment"]
    g = Gen(3)
    text = " ".join(f"_PASS={g.chars('abcdefXYZ0123456789!', 14)}" for _ in range(5_000))
    hits = scanner._find_keywords(text).hits[scanner.detectors.index(det)]
    everything = list(det.find(text, hits, hits))
    assert len(everything) > 4 * STOP_EVERY
    asked: list[int] = []

    def stop() -> bool:
        asked.append(1)
        return len(asked) == 2

    assert list(det.find(text, hits, hits, stop)) == everything[: 2 * STOP_EVERY - 1]
    assert len(asked) == 2


def test_base64_runs_in_non_ascii_text_cost_their_length_not_the_text_before_them(
    scanner: Scanner,
) -> None:
    """Each run's character offset was counted by decoding all the text before it: 20,000
    digests in 1.5 MB of accented text took 15 s of CPU (past the budget: a harmless tool
    output was held for a person). Counted from the run before, it is one pass."""
    rng = random.Random(3)
    digests = ["".join(rng.choice("0123456789abcdef") for _ in range(64)) for _ in range(20_000)]
    text = "\n".join(f"é résumé {d}" for d in digests)
    runs = list(hidden.base64_runs(text))
    assert [text[a:b] for a, b in runs] == digests
    assert all(f.rule_id != UNSCREENED_ID for f in Scanner(scanner.detectors).scan(text))


def test_a_block_of_token_lines_is_walked_for_folds_once(scanner: Scanner) -> None:
    """2,000 lines each starting with a vendor prefix and all token characters: every line
    could start a folded token, and each walk goes on through the lines after it. A line a
    walk already went through is not walked from again (that was quadratic in lines: 18 s
    of CPU for 4,000)."""
    g = Gen(8)
    lines = 2_000
    text = "".join(f"ghp_{g.chars('abcdefghijKLMNOPQRST', 72)}\n" for _ in range(lines))
    with regex_calls() as calls:
        found = Scanner(scanner.detectors).scan(text)
    assert len(found) == lines
    assert calls[hidden._FOLD] <= 2 * (1 + hidden.LAYERS) * lines


# The patterns as they were before they were made linear: what the new ones must still
# find, on every labelled sample and on long runs.
_BEFORE = {
    "http.session-cookie": r"""(?i:\b(?:set-)?cookie)["']?[ \t]*[:=][ \t]*["']?(?:[^\n]*?[; ])?"""
    r"""(?P<name>[\w.-]*(?i:sess|sid|auth|token|jwt|remember|login)[\w.-]*)="""
    r"""(?P<secret>[^;\s"'\\,]{16,})""",
    "generic.keyword-value": r"""(?x)
      (?P<word>(?i:key[ \t:-]|secret[ \t-]|token[ \t-]|password[ \t]))
      [ \t]*(?:(?i:is|was)[ \t]+|(?:[:=]|->|-(?=[ \t]))[ \t]*)?
      (?P<quote>["'`])?
      (?P<secret>[A-Za-z0-9][A-Za-z0-9+/_.~-]{7,1023}={0,2})
      (?(quote)(?P=quote)|(?=[\s,;)\]}>&"'`]|\Z))""",
}


def _secrets(det: Detector, pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    """The detector's findings with `pattern` in place of its own, over the whole text."""
    with_pattern = Detector(**{**_fields(det), "patterns": (pattern,)})
    return [(f.start, f.end) for f in with_pattern.find(text, [(0, len(text))])]


def _fields(det: Detector) -> dict[str, Any]:
    return {k: getattr(det, k) for k in Detector.__dataclass_fields__}


@pytest.mark.parametrize("rule", sorted(_BEFORE))
def test_the_linear_patterns_find_what_the_backtracking_ones_found(
    scanner: Scanner, rule: str
) -> None:
    (det,) = [d for d in scanner.detectors if d.id == rule]
    before = re.compile(_BEFORE[rule])
    g = Gen(9)
    value = g.chars("abcdefXYZ0123456789", 24)
    texts = [s.text for s in (*positives(), *negatives())] + [
        f"Cookie: a=1; cookie=x; b=2; sessionid={value}; c=3",
        f"Set-Cookie: Cookie: x=1; auth_token={value}; Path=/",
        f"cookie: id=1; cookie: remember_me={value}",
        _run("cookie= ", 3_000) + f"; sess={value}",
        _run("SESS=", 3_000),
        f"API key: {value} and secret-{value}==, token {value}=x",
        _run("KEY-", 3_000),
        _run("key-A", 3_000) + " ",
        f"password '{value}' token-{value}`",
    ]
    for text in texts:
        now, then = _secrets(det, det.patterns[0], text), _secrets(det, before, text)
        if rule == "http.session-cookie":  # now every session cookie of a line, not one
            assert set(then) <= set(now), text[:200]
        else:
            assert now == then, text[:200]


def test_a_name_in_code_with_no_blank_for_a_megabyte(scanner: Scanner) -> None:
    """`x(token=V)` in minified code: whether the name is in a flag's value
    (`--from-literal=password=V`) is read from the word holding it, looked for at most 200
    characters back. Read to the last blank, each name cost a search back to the start of
    the line: 6,000 of them after a megabyte took longer than the budget."""
    value = Gen(31).chars("abcdefXYZ0123456789", 24)
    text = _run("a=1;", MILLION) + f"x(token={value});" * 6_000
    found = Scanner(scanner.detectors).scan(text)
    assert [f for f in found if f.rule_id == UNSCREENED_ID] == []


@pytest.mark.parametrize("tail", ["", "=x"])
def test_a_line_of_many_keywords_is_read_for_a_fold_once(scanner: Scanner, tail: str) -> None:
    """150 keywords on each of 400 lines: whether a token starts after other text on a
    line and is folded before or after it is decided by the line's first keywords, not
    looked up again from each (that was quadratic in a line's keywords: 1.9 s of CPU per
    MB against 0.7 before the fold reading)."""
    lines = 400
    text = ("ghp_" * 150 + tail + "\n") * lines
    with regex_calls() as calls:
        Scanner(scanner.detectors).scan(text)
    # The first two keywords of each line (the first starts its run: it decides nothing).
    assert calls[hidden._TOKEN_BEFORE] <= 4 * lines
