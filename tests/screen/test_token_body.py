"""A GitHub or npm token's body with its prefix cut off (`${GH_TOKEN#ghp_}`, `cut -c5-`,
the prefix and the body sent in two pieces) carried no keyword, so no detector read it.
Its last 6 characters are the base62 CRC32 of the first 30: a stretch of 36 letters and
digits that passes is that body (a random one passes once in 62**6), at the high tier."""

from __future__ import annotations

import base64
import random
import string

import pytest

from gate.screen.secrets import Scanner, Tier
from screen.secrets_corpus import Gen

RULE = "github.token-body"
ALNUM = string.ascii_letters + string.digits

FORMS = {
    "alone": "{}",
    "echoed": 'echo "{}"\n',
    "assigned": "GH_TOKEN_TAIL={}\n",
    "letter before": "x{}",
    "after": "{}_old",
    "in a name": "backup/MY_TOKEN_{}.txt",
    "dashes": "-{}-",
    "json": '{{"tail": "{}"}}',
}


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def _body(seed: int, prefix: str = "ghp_") -> str:
    return Gen(seed).crc_token(prefix)[4:]


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("prefix", ["ghp_", "gho_", "npm_"])
def test_a_token_body_without_its_prefix_is_found_at_the_high_tier(
    scanner: Scanner, form: str, prefix: str
) -> None:
    body = _body(len(form) * 7 + len(prefix), prefix)
    text = FORMS[form].format(body)
    found = [(f.rule_id, f.tier, text[f.start : f.end]) for f in scanner.scan(text)]
    assert (RULE, Tier.HIGH, body) in found, found


def test_a_body_encoded_or_written_backwards_is_found(scanner: Scanner) -> None:
    body = _body(3)
    for text in (
        base64.b64encode(body.encode()).decode(),
        base64.b64encode(f"tail={body}\n".encode()).decode(),
        body[::-1],
        f"rev: {body[::-1]}\n",
    ):
        assert [f for f in scanner.scan(text) if f.tier is Tier.HIGH], text


def test_the_whole_token_is_reported_as_the_token(scanner: Scanner) -> None:
    token = Gen(4).crc_token("ghp_")
    [f] = scanner.scan(f"GITHUB_TOKEN={token}\n")
    assert (f.rule_id, f.start, f.end) == ("github.token", 13, 13 + len(token))


def test_a_body_whose_checksum_fails_is_no_token(scanner: Scanner) -> None:
    body = _body(5)
    changed = body[:10] + ("A" if body[10] != "A" else "B") + body[11:]
    assert [f for f in scanner.scan(f"tail: {changed}\n") if f.rule_id == RULE] == []


def test_random_runs_blobs_and_digests_hold_no_body(scanner: Scanner) -> None:
    """Runs of 36 letters and digits, base64 (standard and URL-safe, wrapped or not) and
    git's hex hashes: the checksum passes once in 5.7e10 by chance, and blobs are not
    read (the cost of checking each of their stretches)."""
    rng = random.Random(36)
    runs = " ".join(
        "".join(rng.choices(ALNUM, k=rng.choice((36, 37, 40, 48)))) for _ in range(20_000)
    )
    blob = base64.b64encode(rng.randbytes(300_000)).decode()
    url = base64.urlsafe_b64encode(rng.randbytes(300_000)).decode()
    wrapped = "\n".join(blob[i : i + 76] for i in range(0, len(blob), 76))
    shas = "\n".join(f"commit {rng.randbytes(20).hex()}" for _ in range(5_000))
    for text in (runs, blob, url, wrapped, shas):
        assert [f for f in scanner.scan(text) if f.rule_id == RULE] == []
