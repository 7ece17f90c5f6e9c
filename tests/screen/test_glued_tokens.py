"""A token glued to the word before it is still the token where its prefix is a vendor's
own (`backup_ghp_....txt`, `x$(cat token)`, `MY_TOKEN_sk-ant-...`): one character in front
used to hide 139 of 152 high-tier formats from the detectors (an attacker review's find).
Prefixes of letters and digits alone, or an ordinary word (`AKIA`, `api-`), keep their
guard: hex dumps, base64 and words hold them by chance."""

from __future__ import annotations

import pytest

from gate.screen.detectors import distinctive_prefix
from gate.screen.secrets import Scanner, Tier
from screen.secrets_corpus import positives

GLUES = ("x{}", "9{}", "backup_{}.txt", "MY_TOKEN_{}", "?t=x{} ")


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
    assert len(_tokens(scanner)) >= 90


@pytest.mark.parametrize("glue", GLUES)
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
