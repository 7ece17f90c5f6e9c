"""A token glued to the word before it is still the token where its prefix is a vendor's
own (`backup_ghp_....txt`, `x$(cat token)`, `MY_TOKEN_sk-ant-...`): one character in front
used to hide 139 of 152 high-tier formats from the detectors (an attacker review's find).
So is one glued after it (`echo "${TOKEN}x"`, `${TOKEN}_old`): one letter, digit, `_` or
`-` after it hid 62 to 74 of 94 such formats, at every tier (the closing guard); prefixes
with a `.` (`hvs.`, `dp.pt.`) and Slack's joined them (110 formats).
Prefixes of letters and digits alone, or an ordinary word (`AKIA`, `api-`), keep their
guard: hex dumps, base64 and words hold them by chance."""

from __future__ import annotations

import pytest

from gate.screen.detectors import distinctive_prefix
from gate.screen.secrets import Scanner, Tier
from screen.secrets_corpus import Gen, positives

GLUES = ("x{}", "9{}", "backup_{}.txt", "MY_TOKEN_{}", "?t=x{} ")
# After it: `echo "${TOKEN}x"`, `${TOKEN}_old`, a digit; around it.
AFTER = ("{}x", "{}_", "{}0", "{}Zq9Zq9Zq9", "{}_backup", "{}-", "x{}_", "_{}9")
# A run of one character after it: a placeholder to the checks, whole (`${TOKEN}aaa...`).
PADS = ("{}" + "a" * 250, "{}" + "0" * 100, "{}" + "_" * 50, "{}" + "ab" * 60)
# Padded on both sides past the 16 characters that make a match "inside a run".
BOTH = ("a" * 20 + "{}" + "a" * 20, "x" * 16 + "{}" + "y" * 16, "ab" * 10 + "{}" + "ab" * 10)


def _tokens(scanner: Scanner) -> dict[str, str]:
    """One token per high-tier detector whose prefix is distinctive, as the corpus makes
    them, found alone at the high tier."""
    rules = {
        d.id for d in scanner.detectors if d.tier is Tier.HIGH and distinctive_prefix(d.keywords)
    }
    out: dict[str, str] = {}
    for seed in (1, 2):
        for s in positives(seed=seed):
            if s.rule_id not in rules or s.rule_id in out or not s.spans:
                continue
            a, b = s.spans[0]
            token = s.text[a:b]
            if "\n" not in token and any(f.tier is Tier.HIGH for f in scanner.scan(token)):
                out[s.rule_id] = token
    return out


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def test_most_high_tier_formats_have_a_distinctive_prefix(scanner: Scanner) -> None:
    assert len(_tokens(scanner)) >= 105


@pytest.mark.parametrize("glue", GLUES + AFTER + PADS + BOTH, ids=lambda g: g[:12])
def test_a_token_glued_to_a_word_is_found(scanner: Scanner, glue: str) -> None:
    missed = []
    for rule, token in _tokens(scanner).items():
        text = f"output: {glue.format(token)} done"
        at = text.index(token)
        found = [f for f in scanner.scan(text) if f.tier is Tier.HIGH]
        if not any(f.start <= at and f.end >= at + len(token) for f in found):
            missed.append(rule)
    assert missed == []


def test_a_generic_or_alphanumeric_prefix_keeps_its_guard() -> None:
    assert distinctive_prefix(("ghp_", "gho_")) and distinctive_prefix(("sk-ant-",))
    for keywords in (("akia",), ("4b1d",), ("api-",), ("secret_",), ("ghp_", "xo"), ()):
        assert not distinctive_prefix(keywords), keywords


def test_a_content_hash_in_a_name_holding_a_hex_vendor_prefix_is_no_token(
    scanner: Scanner,
) -> None:
    """`vipul-<sha256>.png` holds Pulumi's `pul-` and 40 hex digits then 24 more: with
    both guards gone it read as a token. A hex run of a digest's length, longer than the
    token, inside a name is a hash; the token glued to one more digit is not (`_{}9`)."""
    g = Gen(64)
    hexed = {}  # keyword: (rule, hex digits in its token)
    for rule, token in _tokens(scanner).items():
        [det] = [d for d in scanner.detectors if d.id == rule]
        key = next((k for k in det.keywords if token.lower().startswith(k)), None)
        if key and all(c in "0123456789abcdefABCDEF" for c in token[len(key) :]):
            hexed[key] = (rule, len(token) - len(key))
    assert len(hexed) >= 4, hexed
    for key, (rule, body) in hexed.items():
        for digits in (d for d in (40, 64, 128) if d > body):
            text = f'<img src="./assets/vi{key}{g.hex(digits)}.png" alt="">'
            assert not [f for f in scanner.scan(text) if f.tier is Tier.HIGH], (rule, text)
            glued = f"_{key}{g.hex(body)}9 "
            assert [f for f in scanner.scan(glued) if f.tier is Tier.HIGH], (rule, glued)


def test_random_base64url_holds_no_glued_token(scanner: Scanner) -> None:
    """With both guards gone, a long base64url run holds a vendor prefix and a body by
    chance, read forwards or backwards (8 high-tier findings in 4 MB of it): a match with
    16 token characters on both sides is inside a run, not a token."""
    import base64
    import random

    rng = random.Random(9)
    high = 0
    for _ in range(6):
        text = "\n".join(base64.urlsafe_b64encode(rng.randbytes(600)).decode() for _ in range(250))
        high += sum(1 for f in scanner.scan(text) if f.tier is Tier.HIGH)
    assert high == 0
