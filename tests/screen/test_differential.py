"""The fast scanner finds exactly what the plain window scan it replaced finds: on the
labelled corpus, on mixed agent traffic, and on random text with tokens planted in every
way the detectors and the hidden-form passes read (keywords at window edges, tokens
split, folded, base64-wrapped, JSON-escaped, non-ASCII around them)."""

from __future__ import annotations

import base64
import json
import random
from urllib.parse import quote

import pytest

from gate.screen import leads
from gate.screen.secrets import Scanner, unescaped_view
from screen import reference_scanner
from screen.reference_scanner import ReferenceScanner
from screen.secrets_corpus import negatives, positives, realistic_text

INVISIBLE = "\u200b\u200c\u200d\u2060\ufeff\u00ad"


@pytest.fixture(scope="module")
def pair() -> tuple[Scanner, ReferenceScanner]:
    fast = Scanner()
    return fast, ReferenceScanner(fast.detectors)


def _same(pair: tuple[Scanner, ReferenceScanner], text: str) -> None:
    fast, ref = pair
    assert fast._scan(text) == ref._scan(text), text[:300]


def test_the_labelled_corpus(pair: tuple[Scanner, ReferenceScanner]) -> None:
    for sample in [*positives(), *negatives()]:
        _same(pair, sample.text)


def test_mixed_agent_traffic(pair: tuple[Scanner, ReferenceScanner]) -> None:
    _, chunks = realistic_text(400_000, seed=11)
    for chunk in chunks:
        _same(pair, chunk)


@pytest.mark.parametrize("seed", range(4))
def test_the_unescaped_view(seed: int) -> None:
    """Runs of backslashes pair from their start, whatever follows them."""
    rng = random.Random(seed)
    units = ["\\", "\\\\", "\\n", "n", "r", "t", '"', "'", "u200b", "a", " ", "é", "\n"]
    for _ in range(3000):
        text = "".join(rng.choice(units) for _ in range(rng.randrange(40)))
        assert unescaped_view(text) == reference_scanner.unescaped_view(text), text


def _pieces(rng: random.Random, tokens: list[str], words: list[str]) -> str:
    """One random stretch: a planted token (maybe hidden), a keyword, an operator, junk."""
    pick = rng.random()
    if pick < 0.25:
        token = rng.choice(tokens)
        how = rng.random()
        if how < 0.15:
            at = rng.randrange(1, len(token))
            token = token[:at] + rng.choice(INVISIBLE) + token[at:]
        elif how < 0.25:
            at = rng.randrange(1, len(token))
            token = token[:at] + rng.choice(["\n", "\\\n", "\\n", "   \n"]) + token[at:]
        elif how < 0.35:
            token = base64.b64encode(f"key={token}\n".encode()).decode()
        elif how < 0.45:
            token = json.dumps(token)[1:-1]
        elif how < 0.5:
            token = quote(token, safe="")
        return token
    if pick < 0.5:
        word = rng.choice(words)
        return rng.choice([word, word.upper(), word.title()])
    if pick < 0.65:
        return rng.choice(
            [
                "=",
                ": ",
                '":"',
                " = '",
                "\n",
                " ",
                "=> ",
                "\\n",
                '\\"',
                ", ",
                "Bearer ",
                "Authorization: ",
                "://user:",
                "@",
                "\t",
                "é",
                "→",
                "%3D",
                "%20",
                "=3D",
                "\\u0022",
                "\\/",
            ]
        )
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./+ "
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 60)))


@pytest.mark.parametrize("seed", range(8))
def test_random_text_with_planted_tokens(pair: tuple[Scanner, ReferenceScanner], seed: int) -> None:
    rng = random.Random(seed)
    tokens = [s.text[a:b] for s in positives(seed) for a, b in s.spans]
    words = sorted({w for d in pair[0].detectors for w in d.keywords})
    for _ in range(60):
        _same(pair, "".join(_pieces(rng, tokens, words) for _ in range(rng.randrange(5, 80))))


@pytest.mark.parametrize("seed", range(3))
def test_each_detector_gets_its_keyword_hits_sorted(
    pair: tuple[Scanner, ReferenceScanner], seed: int
) -> None:
    """The keyword pass sorts only a detector's hits from several keywords: one keyword's
    hits must come in order from the automaton (non-ASCII text included)."""
    fast, _ = pair
    rng = random.Random(seed)
    tokens = [s.text[a:b] for s in positives(seed) for a, b in s.spans]
    words = sorted({w for d in fast.detectors for w in d.keywords})
    texts = [
        "".join(_pieces(rng, tokens, words) for _ in range(rng.randrange(5, 80))) for _ in range(60)
    ]
    texts += [t.replace(" ", " é ") for t in texts[:20]] + realistic_text(100_000, seed=seed)[1]
    for text in texts:
        for spans in fast._find_keywords(text).hits.values():
            assert spans == sorted(set(spans)), text[:300]


def test_most_vendor_formats_are_searched_only_at_their_keywords(
    pair: tuple[Scanner, ReferenceScanner],
) -> None:
    """The speed comes from here: a pattern the analysis cannot read is scanned window by
    window, correctly but slowly, so a new detector should keep its keyword in front."""
    fast, _ = pair
    windowed = [d for d in fast.detectors if not d.anchor]
    led = [
        d
        for d in windowed
        if all(leads.lead(p, d.keywords, d.before) is not False for p in d.patterns)
    ]
    assert len(led) >= 0.85 * len(windowed)


@pytest.mark.parametrize(
    ("pattern", "keywords", "before", "expected"),
    [
        (
            r"(?<![A-Za-z0-9_])gh[pousr]_[A-Za-z0-9]{36}",
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
            8,
            True,
        ),
        (
            r"(?<![A-Za-z0-9_])gh[pousrx]_[A-Za-z0-9]{36}",
            ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
            8,
            False,
        ),  # ghx_ holds no keyword
        (r"(?i:\b(?:set-)?cookie)[:=]", ("cookie",), 4, True),
        (r"(?i:\b(?:set-)?cookie)[:=]", ("cookie",), 3, False),  # set-cookie: keyword at 4
        (r"[0-9a-f]{32}-us[0-9]{1,2}", ("-us",), 34, True),
        (r"[0-9a-f]{32,40}-us[0-9]{1,2}", ("-us",), 34, False),
        (r"\bdocker\s+login", ("docker login",), 0, False),  # docker\tlogin
        (r"(?<=_session=)[0-9a-z]{32}", ("_session=",), 8, False),  # the keyword is before it
        (r"(tok)\1en", ("token",), 0, False),  # backreferences are not followed
        (r"(?i)bearer\s+\S+", ("bearer",), 0, True),
    ],
)
def test_the_lead_analysis(
    pattern: str, keywords: tuple[str, ...], before: int, expected: bool
) -> None:
    import re

    assert leads.led(re.compile(pattern), keywords, before) is expected


def test_the_lead_analysis_of_every_shipped_pattern_is_cheap(
    pair: tuple[Scanner, ReferenceScanner], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It runs on a detector's first use in a process, on a request's path: one wide
    `before` (Azure SAS, 900) once read 110,000 characters of paths, half a second."""
    steps = 0
    step = leads._Walk.step

    def counted(self: leads._Walk, path: leads.Path, chars: leads.Chars) -> leads.Path:
        nonlocal steps
        steps += 1
        return step(self, path, chars)

    monkeypatch.setattr(leads._Walk, "step", counted)
    for d in pair[0].detectors:
        for p in d.patterns:
            leads.led(p, d.keywords, d.before)
    assert steps <= 30_000
