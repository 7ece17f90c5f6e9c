"""A token that starts on a line after other text and goes on on the next is still the
token: `export TOKEN=ghp_...` wrapped at 80 columns, a log line's tail, `printf
'%s\\n%s'` of a token's two halves, a Read tool's numbered lines. Only folds of lines that
were all token were read before: one line break after the token's prefix hid 163 of 164
high-tier formats (an attacker review's find). A token found whole before a line break is
not grown into the next line's first word."""

from __future__ import annotations

import re

import pytest

from gate.screen.detectors import Tier
from gate.screen.secrets import Scanner
from screen.secrets_corpus import positives

_TOKEN = re.compile(r"[A-Za-z0-9_+/.~-]+")
# Where the first half ends and how the second goes on.
LAYOUTS = {
    "newline": "export TOKEN={a}\n{b}\nnext line here",
    "escaped": 'log: "token={a}\\n{b}"\n',  # `\n` written out, as in a JSON string
    "crlf": "value: {a}\r\n{b}\r\n",
    "indented": "out: {a}\n    {b}\n",
    "continued": "curl -H 'x-key: {a}\\\n{b}'\n",
    "numbered": "    12→API_KEY = '{a}\n    13→{b}'\n",
}


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def _tokens(scanner: Scanner) -> dict[str, tuple[str, str]]:
    """One token per high-tier format whose keyword starts it and whose characters are a
    token's (a fold inside `:` or `@` is another shape), found whole alone at the high
    tier: by rule, (token, keyword)."""
    high = {d.id: d for d in scanner.detectors if d.tier is Tier.HIGH}
    out: dict[str, tuple[str, str]] = {}
    for seed in (1, 2):
        for s in positives(seed=seed):
            if s.rule_id not in high or s.rule_id in out or not s.spans:
                continue
            token = s.text[slice(*s.spans[0])]
            keyword = next((k for k in high[s.rule_id].keywords if token.lower().startswith(k)), "")
            if not keyword or not _TOKEN.fullmatch(token):
                continue
            found = scanner.scan(token)
            if any(f.tier is Tier.HIGH and (f.start, f.end) == (0, len(token)) for f in found):
                out[s.rule_id] = (token, keyword)
    return out


def _covers(scanner: Scanner, text: str, a: str, b: str) -> bool:
    """Whether one high-tier finding covers both halves as they stand in `text`."""
    start, end = text.index(a), text.index(b, text.index(a) + len(a)) + len(b)
    return any(
        f.tier is Tier.HIGH and f.start <= start and f.end >= end for f in scanner.scan(text)
    )


def test_most_high_tier_formats_start_with_their_keyword(scanner: Scanner) -> None:
    assert len(_tokens(scanner)) >= 120


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_token_folded_after_other_text_is_found_whole(scanner: Scanner, layout: str) -> None:
    """Folded just after its keyword, half-way, and 8 characters before its end. (A format
    of no fixed length, found whole up to the break, is grown past it only over a run that
    is no word: its last 4 characters alone on the next line, `Iyjv`, may be left.)"""
    missed = []
    for rule, (token, keyword) in _tokens(scanner).items():
        for at in sorted({len(keyword) + 1, len(token) // 2, len(token) - 8}):
            a, b = token[:at], token[at:]
            if not _covers(scanner, LAYOUTS[layout].format(a=a, b=b), a, b):
                missed.append(f"{rule} at {at}")
                break
    assert missed == []


@pytest.mark.parametrize("width", [40, 64, 80])
def test_a_long_line_wrapped_at_any_width(scanner: Scanner, width: int) -> None:
    """`fold -w N` of `export NAME=<token>`: the token's first part ends the first line,
    whole lines of it follow when it is long, and its last part (one character, or more)
    starts the last line. (A break inside the keyword itself, `persona_producti` then
    `on_...`, leaves no keyword to start from: not read.)"""
    missed = []
    for rule, (token, keyword) in _tokens(scanner).items():
        line = f"export SOME_LONGER_NAME={token} # set by ci\n"
        if line.index(token) + len(keyword) > width:
            continue
        text = "\n".join(line[i : i + width] for i in range(0, len(line), width)) + "$ "
        start = text.index(token[:4])
        found = [f for f in scanner.scan(text) if f.tier is Tier.HIGH]
        left = text[:start] + "".join(text[f.end :] for f in found[-1:])
        if not found or re.sub(r"\s", "", token)[-6:] in re.sub(r"\s", "", left):
            missed.append(rule)
    assert missed == []


def test_a_token_whole_on_its_line_keeps_its_span(scanner: Scanner) -> None:
    """`vault token lookup`'s columns, a `.env`, YAML: the next line's first word is no
    rest of a token that ends its line whole."""
    for rule, (token, _) in _tokens(scanner).items():
        for text in (
            f"token             {token}\ntoken_accessor    Zq9wXb3mPc7LrT2v\n",
            f"API_KEY={token}\nOTHER_NAME=value\n",
            f"auth:\n  token: {token}\n  retries: 3\n",
        ):
            at = text.index(token)
            found = [f for f in scanner.scan(text) if f.start <= at < f.end]
            assert [(f.start, f.end) for f in found] == [(at, at + len(token))], (rule, text)


def test_a_fold_before_a_keyword_at_a_token_s_end(scanner: Scanner) -> None:
    """Formats whose keyword ends them (`..._mmk`, Mailchimp's `...-us13`): the break
    before the keyword's run joins the line before it."""
    sample = {
        s.rule_id: s.text[slice(*s.spans[0])]
        for s in positives(seed=1)
        if s.rule_id in ("maxmind.license-key", "mailchimp.api-key") and s.spans
    }
    assert len(sample) == 2
    for rule, token in sample.items():
        a, b = token[: len(token) // 2], token[len(token) // 2 :]
        assert _covers(scanner, f"key: {a}\n{b} done\n", a, b), rule
