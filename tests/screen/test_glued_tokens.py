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

from gate.screen.detectors import distinctive_prefix, loosened
from gate.screen.secrets import Scanner, Tier
from screen.secrets_corpus import ALNUM, Gen, positives

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
    return _corpus_tokens(scanner, rules)


def _corpus_tokens(scanner: Scanner, rules: set[str]) -> dict[str, str]:
    """One token per rule of `rules`, as the corpus makes them, found alone at the high
    tier."""
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


# -- formats whose prefix is not distinctive: their guarded pattern's loosened twin ---------


def _guarded_tokens(scanner: Scanner) -> dict[str, str]:
    """One token per high-tier format that keeps its guards and has a loosened twin, as
    the corpus makes them, found alone at the high tier."""
    return _corpus_tokens(scanner, {d.id for d in scanner.detectors if loosened(d) is not None})


def test_most_guarded_formats_have_a_loosened_twin(scanner: Scanner) -> None:
    twins = [loosened(d) for d in scanner.detectors]
    assert sum(t is not None for t in twins) >= 60
    for twin in (t for t in twins if t is not None):
        assert twin.tier is Tier.LOW and twin.loose and twin.glued
    assert len(_guarded_tokens(scanner)) >= 40


@pytest.mark.parametrize("glue", ("x{}", "9{}", "{}x", "{}_", "{}0", "x{}_", "MY_KEY_{}.bak"))
def test_a_guarded_token_glued_to_a_word_is_redacted_not_asked(scanner: Scanner, glue: str) -> None:
    """`AKIA`, `AIza`, `hf_`, `dapi`... keep their guards (their prefix sits in words and
    blobs by chance), and one character glued on hid 36 to 50 of 59 such formats at every
    tier. Their loosened twin finds the token glued, at the low tier: redacted, never
    passed, and no question for a match that may be chance."""
    missed = []
    for rule, token in _guarded_tokens(scanner).items():
        text = f"output: {glue.format(token)} done"
        at = text.index(token)
        found = scanner.scan(text)
        # (a hex token glued to a hex digit is not told from a longer hex string)
        hexed = all(c in "0123456789abcdefABCDEF" for c in token[4:])
        if hexed and ("0" in glue or "9" in glue):
            continue
        if not any(f.start <= at + 4 and f.end >= at + len(token) - 4 for f in found):
            missed.append(rule)
    # What a twin cannot take: AWS's secret key is 40 base64 characters found by the name
    # before it (one glued on is 41 of them), a Bedrock key's tail is base64 that `_` runs on.
    assert set(missed) <= {"aws.secret-access-key", "aws.bedrock-api-key"}, missed


@pytest.mark.parametrize(
    "text",
    [
        "hf_requiredCharacteristicTypesForDisplayMetadata = []",  # an identifier
        "TODAYINASIAASACKOFRICEFELLOVER",  # AWS's ASIA inside capitals
        'msgstr "GSSAPI-VIRHEKAPSELOINTIMERKKIJONO."',  # Octopus's API- inside a word
        "https://acme.notion.site/API-BD80F56CDC1441E6BF6011AB6D852875",  # a page id
        "sig: qwertyuiopasdfghAKIAZ7QW2X5TEMPLATE3xcvbnmqwertyuiop",  # inside a run
        "isSuspiciousTransactionDetectedForAccount2 = True",  # crates.io's `cio` in a name
        "SocioEconomicIndicatorsForRegion2024Q1Data",
    ],
)
def test_a_guarded_prefix_inside_a_word_or_an_id_is_no_token(scanner: Scanner, text: str) -> None:
    assert scanner.scan(text) == [], text


def test_wrapped_base64_and_hex_hold_no_loosened_token(scanner: Scanner) -> None:
    """A wrapped line of base64 (76 characters) or of hex holds a whole token and a few
    characters either side: the run goes on past the line break. A hex body glued to more
    hex is a longer hex string (a digest read backwards holds ClickHouse's `4b1d`)."""
    import base64
    import random

    rng = random.Random(21)
    blob = base64.b64encode(rng.randbytes(400_000)).decode()
    wrapped = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
    digests = "\n".join(rng.randbytes(32).hex() for _ in range(10_000))
    for text in (wrapped, digests, digests[::-1]):
        assert [f for f in scanner.scan(text) if f.rule_id != "generic.assignment"] == []


@pytest.mark.parametrize(
    "glue",
    [
        "A={}_old\nWORKDIR=/srv/app",  # the next line's words are no blob
        "{}_\nSuccessfully built",
        "PATH=/usr/local/bin/configuration\nx{}",
        "sha256 " + "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" + "\nx{}",
    ],
)
def test_a_glued_guarded_token_beside_a_line_of_words_is_redacted(
    scanner: Scanner, glue: str
) -> None:
    """A line break goes on with a glued run only between whole lines of a wrapped blob
    (60, 64 or 76 characters a line): not into a neighbouring line's words."""
    token = "AIza" + Gen(len(glue)).chars(ALNUM, 35)
    text = glue.format(token)
    at = text.index(token)
    assert [(f.start, f.end, f.tier) for f in scanner.scan(text)] == [
        (at, at + len(token), Tier.LOW)
    ], text


def test_random_hex_read_turned_holds_no_loosened_token(scanner: Scanner) -> None:
    """rot47 turns hex digits into `hf_` and letters: a twin read inside a turned reading
    found a Hugging Face token in 4 MB of random hex (a request body a test sends). Twins
    do not read turned text."""
    import random

    for seed in (1, 2):
        text = random.Random(seed).randbytes(2 << 20).hex()
        assert scanner.scan(text) == []
