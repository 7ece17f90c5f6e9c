"""The denied index's letters-and-digits pass (gate/screen/skeleton.py): a random-looking
value is found through separators, case changes and cuts; word-like values, ordinary text
and other tokens of the same kind are not."""

from __future__ import annotations

import base64
import itertools
import os
import random
import string

import pytest

from gate.rules.model import Effect, Rule
from gate.screen.fingerprints import DeniedIndex, Source
from gate.screen.skeleton import of_random_bytes, random_looking
from screen.secrets_corpus import realistic_text
from screen.test_real_world_negatives import harmless_texts

_RULE = Rule(
    effect=Effect.DENY, tool="Read", specifier="./.env", source="r.yaml", line=1, root=None
)


def _index(*values: str) -> DeniedIndex:
    return DeniedIndex({v: Source("/p/.env", _RULE) for v in values})


def _token(n: int, alphabet: str = string.ascii_letters) -> str:
    """Random characters of `alphabet` with a digit every fifth one: any 12 of them in a
    row look random."""
    rng = random.SystemRandom()
    return "".join(rng.choice(string.digits if i % 5 == 4 else alphabet) for i in range(n))


@pytest.mark.parametrize(
    ("chars", "expected"),
    [
        ("Xk3pQ9zLm2Wv", True),
        ("3f9a0b7c41de", True),
        ("internalExampleCom", False),
        ("HelloWorld2024Project", False),
        ("sk_live_", False),
        ("correcthorsebatterystaple", False),
        ("aaaaaaaa1111", False),
    ],
)
def test_random_looking(chars: str, expected: bool) -> None:
    assert random_looking(chars) is expected


def test_a_value_is_found_through_separators_case_and_cuts() -> None:
    value = _token(28)
    index = _index(value)
    for text in (
        " ".join(value),
        "#".join(value),
        "\n".join(value[i : i + 5] for i in range(0, 28, 5)),
        value.swapcase(),
        value.capitalize(),
        f"x = '{value[:9]}' + '{value[9:]}'",
        value.encode().hex(" "),
        " ".join(str(b) for b in value.encode()),
        "\n".join(base64.b64encode(value.encode()).decode()[i : i + 6] for i in range(0, 40, 6)),
        f"the first half {value[:14]} then",
        f"the second half {value[14:]}.",
    ):
        hits = index.hits(text)
        assert hits, text
        left = "".join(c for c in text[: hits[0].start] + text[hits[-1].end :] if c.isalnum())
        assert value[:10].lower() not in left.lower()


def test_a_piece_is_found_from_thirteen_letters_and_digits() -> None:
    value = _token(30)
    index = _index(value)
    assert index.hits(f"a {value[5:18]} b")
    assert not index.hits(f"a {value[5:16]} b")


def _key_line(start: str, middle: str) -> str:
    """A key file's 64-character line (base64 of random bytes) that starts with `start`
    and holds `middle` at its 20th character: shapes one line in thousands has."""
    while True:
        line = base64.b64encode(os.urandom(48)).decode()
        line = start + line[len(start) : 20] + middle + line[20 + len(middle) :]
        if of_random_bytes(line):  # (almost always: a check that `line` is what it says)
            return line


@pytest.mark.parametrize(
    ("start", "middle"),
    [
        ("", "bRrrAffgyMit+TqNtcN"),  # letters only, capitalised like words
        ("", "NEitaFCnUrDSXOtgoq"),
        ("MC", "x3"),  # a DER or JWT start, by chance, on a middle line
        ("eyJ", "Lrlvav0PI/2HudDE"),
        ("MIIbzq", ""),
    ],
)
def test_any_piece_of_a_key_line_is_found_whatever_its_letters(start: str, middle: str) -> None:
    """A key line is random bytes: 13 of its letters and digits in a row identify it even
    where they look like capitalised words or start as a DER header does (one key in
    thirty held such a piece; the shell cut it out and it passed)."""
    line = _key_line(start, middle)
    index = _index(line)
    for at in range(0, len(line) - 18, 3):
        piece = line[at:][: next(i for i in range(13, 30) if _alnum(line[at : at + i]) >= 13)]
        assert index.hits(f"cut: {piece}\n"), (line, piece)


def _alnum(text: str) -> int:
    return sum(c.isalnum() for c in text)


def test_a_key_line_with_no_digit_is_found_by_its_pieces() -> None:
    rng = random.SystemRandom()
    letters = string.ascii_letters + "+/"
    while not of_random_bytes(line := "".join(rng.choice(letters) for _ in range(64))):
        pass
    index = _index(line)
    assert index.hits(f"x {line[10:30]} y")


def test_words_in_base64_s_alphabet_are_no_key_line() -> None:
    """Any run of letters decodes as base64: a passphrase of capitalised words keeps
    being found whole only, never by a piece that prose could make."""
    phrase = "CorrectHorseBatteryStapleIsMyFavouritePass"
    assert not of_random_bytes(phrase)
    assert not of_random_bytes(base64.b64encode(b"#!/bin/sh\necho hello world\n").decode())
    index = _index(phrase)
    assert not index.hits("the correct horse battery staple is my favourite")
    assert index.hits(f"pw={phrase}")


def test_a_hex_value_with_few_different_digits_is_found_through_separators() -> None:
    """One random 24-digit hex value in 140 (`fake_secret()`'s shape, many API keys')
    holds only 8 or 9 different digits: it was taken for words and found only as
    written, so `fold -w4` or a cut of it passed."""

    def turns(v: str) -> int:  # digits to letters and back
        return sum(a.isdigit() != b.isdigit() for a, b in itertools.pairwise(v))

    value = ""
    while len(set(value)) != 9 or turns(value) < 3:
        value = os.urandom(12).hex()
    assert random_looking(value)
    index = _index(value)
    for text in (
        " ".join(value),
        value.upper()[3:17],
        "\n".join(value[i : i + 4] for i in range(0, 24, 4)),
    ):
        assert index.hits(f"out: {text} end"), text


def test_word_like_values_are_found_as_written_only() -> None:
    index = _index("correcthorsebatterystaple", "sunflower")
    assert index.hits("pw: correcthorsebatterystaple")
    assert not index.hits("correct horse battery staple")
    assert not index.hits("s u n f l o w e r, SUNFLOWERS")


def test_tokens_that_begin_alike_do_not_withhold_each_other() -> None:
    def jwt() -> str:
        head = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT"}').decode().rstrip("=")
        body = base64.urlsafe_b64encode(os.urandom(48)).decode().rstrip("=")
        return f"{head}.{body}.{_token(43)}"

    index = _index(jwt(), "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + _token(32), "sk_live_" + _token(24))
    other = f"Authorization: Bearer {jwt()}\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC{_token(32)}\n"
    other += "sk_live_" + _token(24) + " " + b"sk_live_".hex() + _token(16).encode().hex()
    assert index.hits(other) == []


def test_ordinary_text_holds_none_of_many_random_values() -> None:
    values = [_token(n) for n in (16, 20, 24, 32, 40) for _ in range(60)]
    values += [os.urandom(20).hex() for _ in range(60)]
    values += [base64.b64encode(os.urandom(30)).decode() for _ in range(60)]
    index = _index(*values)
    _, chunks = realistic_text(1_500_000)
    texts = chunks + [text for _, text in harmless_texts()]
    assert [t[:80] for t in texts if index.hits(t)] == []
