"""Text turned so that no detector reads it (gate/screen/turned.py): a token written
backwards or rot13-ed is found at its place, at the tier it has as written; ordinary text
turned is not a finding; a denied value of 10+ characters is found turned either way."""

from __future__ import annotations

import random
import shutil
import string
import subprocess

import pytest

from conftest import fake_secret
from gate.rules.model import Effect, Rule
from gate.screen.denied_walk import Source
from gate.screen.detectors import Tier
from gate.screen.fingerprints import DeniedIndex
from gate.screen.secrets import Scanner
from gate.screen.turned import REVERSED, ROT13, SWAPCASE, TURNS

SCANNER = Scanner()
SOURCE = Source(
    "/p/.env",
    Rule(effect=Effect.DENY, tool="Read", specifier="./.env", source="test", line=1, root=None),
)


def _tokens() -> dict[str, str]:
    rand = random.SystemRandom()
    alnum = string.ascii_letters + string.digits
    return {
        "aws.access-key-id": "AKIA"
        + "".join(rand.choice(string.ascii_uppercase + "234567") for _ in range(16)),
        "anthropic.api-key": "sk-ant-api03-"
        + "".join(rand.choice(alnum + "-_") for _ in range(93))
        + "AA",
        "github.token": "ghp_" + "".join(rand.choice(alnum) for _ in range(36)),
    }


@pytest.mark.parametrize("turn", TURNS, ids=[t.name for t in TURNS])
def test_a_turned_token_is_found_where_it_is_at_its_tier(turn: object) -> None:
    for rule, token in _tokens().items():
        plain = [f for f in SCANNER.scan(f"export KEY={token}\n") if f.rule_id == rule]
        assert plain, rule
        line = turn.apply(f"export KEY={token}")  # type: ignore[attr-defined]
        text = f"$ cat notes | {turn.name}\n{line}\ndone\n"  # type: ignore[attr-defined]
        found = [f for f in SCANNER.scan(text) if f.rule_id == rule]
        assert found and found[0].tier is plain[0].tier, (rule, text)
        # Reported over the turned token itself.
        assert text[found[0].start : found[0].end] == turn.apply(token)  # type: ignore[attr-defined]


def test_the_real_rev_and_tr_are_read() -> None:
    token = _tokens()["aws.access-key-id"]
    env = f"# settings\nAWS_ACCESS_KEY_ID={token}\nREGION=eu-west-1\n".encode()
    for command, tool in (("rev", "rev"), ("tr A-Za-z N-ZA-Mn-za-m", "tr")):
        if shutil.which(tool) is None:
            continue
        out = subprocess.run(command.split(), input=env, capture_output=True, check=True)
        found = [f for f in SCANNER.scan(out.stdout.decode()) if f.tier is Tier.HIGH]
        assert [f.rule_id for f in found] == ["aws.access-key-id"], command


@pytest.mark.parametrize(
    "text",
    [
        "The quick brown fox jumps over the lazy dog. " * 20,
        "def main():\n    return parse(argv)[::-1]\n" * 20,
        "".join(reversed("lockfile-resolved: sha512-" + "ab" * 40)),
    ],
)
def test_ordinary_text_turned_is_not_a_finding(text: str) -> None:
    for turn in TURNS:
        assert SCANNER.scan(turn.apply(text)) == [], turn.name


def test_a_denied_value_is_found_reversed_and_rot13ed() -> None:
    value = fake_secret("Pass-")
    index = DeniedIndex({value: SOURCE})
    for turn in (REVERSED, ROT13):
        out, hits = index.redact(f"x {turn.apply('DB_PASSWORD=' + value)} y")
        assert hits and value not in out and turn.apply(value) not in out, turn.name


def test_a_turned_token_is_not_grown_into_the_next_line() -> None:
    """A rot13-ed token whose turned text holds another vendor's keyword (`Eaa`,
    Facebook's) by chance: the fold reading joins its line to the next (`done`), and the
    rescan must not turn the joined line back and grow the token over that word (one
    random token in 180 was reported over `\\ndone`)."""
    rot13 = next(t for t in TURNS if t.name == "rot13")
    token = "ghp_x7Kq2mZ9Rnn90p6Q9OPcqGxv4WbT3a7dLsYw"  # its rot13 holds `Eaa`
    assert len(token) == 40 and "Eaa" in rot13.apply(token)
    text = f"$ cat notes | rot13\n{rot13.apply(f'export KEY={token}')}\ndone\n"
    found = [f for f in SCANNER.scan(text) if f.rule_id == "github.token"]
    assert [text[f.start : f.end] for f in found] == [rot13.apply(token)]


def test_a_token_with_its_case_swapped_is_found_where_it_is_at_its_tier() -> None:
    """`tr a-zA-Z A-Za-z`, `.swapcase()`: the keyword pass ignores case, so the vendor
    keyword is hit as written (`GHP_`), and its line is read with the case swapped back."""
    # Each holds a digit (a swapped finding without one is dropped: a name in capitals).
    tokens = {k: v[:20] + "7" + v[21:] for k, v in _tokens().items() if k != "aws.access-key-id"}
    tokens["sentry.token"] = "sntryu_" + "".join(random.choices("0123456789abcdef", k=64))
    for rule, token in tokens.items():
        plain = [f for f in SCANNER.scan(f"export KEY={token}\n") if f.rule_id == rule]
        assert plain, rule
        for shown in (token.swapcase(), token.upper() if rule == "sentry.token" else None):
            if shown is None:
                continue
            text = f"$ cat notes | tr a-zA-Z A-Za-z\nexport KEY={shown}\ndone\n"
            found = [f for f in SCANNER.scan(text) if f.rule_id == rule]
            assert found and found[0].tier is plain[0].tier, (rule, text)
            assert text[found[0].start : found[0].end] == shown


@pytest.mark.parametrize(
    "text",
    [
        "SELECT ID FROM PAT.ACCOUNTS WHERE DAPI_VERSION = 2; -- SG.SEND, HVS.READ\n" * 20,
        "CONSTANT GHP_TOKEN_PREFIX = 'GHP_'; XOXB-PREFIX; SK-ANT-API03 IS THE FORMAT\n" * 20,
        "sha256: " + "".join(random.Random(5).choices("0123456789ABCDEF", k=64)) + "\n",
    ],
)
def test_ordinary_upper_case_text_is_not_read_as_a_swapped_token(text: str) -> None:
    assert SCANNER.scan(text) == []
    assert SCANNER.scan(SWAPCASE.apply(text)) == []


def test_names_in_capitals_and_camel_case_are_not_read_as_swapped_tokens() -> None:
    """Swapped, `GLC_CreateLightmapTextureArray` is `glc_cREATElIGHTMAP...`: a Grafana
    token's shape, random-looking in its cases. A name holds no digit; a token does."""
    text = (
        "static void GLC_CreateLightmapTextureArray(void);\n"
        "subdirs = glob.glob('HF_CAASIMULIAComputeServicesBuildTime.HF*.Linux64')\n"
    )
    assert SCANNER.scan(text) == []


def test_the_real_tr_rot47_is_read() -> None:
    """`tr '!-~' 'P-~!-O'` is rot47 (CyberChef's, every printable character but the space):
    a token in lower-case and one in capitals as their vendors write them."""
    tokens = _tokens()
    env = (
        f"GITHUB_TOKEN={tokens['github.token']}\nAWS_ACCESS_KEY_ID={tokens['aws.access-key-id']}\n"
    )
    if shutil.which("tr") is None:
        pytest.skip("no tr")
    out = subprocess.run(
        ["tr", "!-~", "P-~!-O"], input=env.encode(), capture_output=True, check=True
    ).stdout.decode()
    assert out != env
    found = {f.rule_id for f in SCANNER.scan(out)}
    assert {"github.token", "aws.access-key-id"} <= found, out


def test_a_swapped_token_under_a_secret_s_name_is_found_at_its_tier() -> None:
    """`GITHUB_TOKEN=GHP_...`: the generic assignment finding covers the keyword, and must
    not stop the swapped read (the token was found only at the low tier)."""
    token = _tokens()["github.token"]
    token = token[:20] + "7" + token[21:]
    for text in (f"GITHUB_TOKEN={token.swapcase()}\n", f'password = "{token.swapcase()}"\n'):
        found = [f for f in SCANNER.scan(text) if f.rule_id == "github.token"]
        assert found, text
