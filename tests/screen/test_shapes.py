"""gate's own shape checks keep detect-secrets' verdicts (the checks used its filters before),
and the detectors that replaced three of its plugins find their formats."""

from __future__ import annotations

import base64
import json
import random
import re
import string

import pytest
from detect_secrets.filters import heuristic
from detect_secrets.plugins.jwt import JwtTokenDetector

from gate.screen import shapes
from gate.screen.detectors import Tier


def _samples() -> list[str]:
    rng = random.Random(3)
    alphabet = string.printable + "é→"
    enc = base64.urlsafe_b64encode
    jwt = (
        ".".join(
            enc(json.dumps(p).encode()).decode().rstrip("=")
            for p in ({"alg": "HS256"}, {"sub": "1"})
        )
        + ".c2ln"
    )
    fixed = [
        "",
        "$",
        "{",
        "<x>",
        "{x}",
        "${x}",
        "$x}",
        "ABCDEF",
        "0123456789",
        "abcdefgh",
        "5f2b8c1e-9a7d-4630-8c1e-9a7d46305f2b",
        jwt,
        jwt + "a",
        jwt[:-1],
        "a.b.c",
        "e30.e30.",
    ]
    return fixed + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40))) for _ in range(3000)
    ]


@pytest.mark.parametrize(
    ("mine", "theirs"),
    [
        (shapes.is_potential_uuid, heuristic.is_potential_uuid),
        (shapes.is_sequential_string, heuristic.is_sequential_string),
        (shapes.is_templated_secret, heuristic.is_templated_secret),
        (shapes.is_formally_valid_jwt, JwtTokenDetector.is_formally_valid),
    ],
)
def test_the_shapes_agree_with_detect_secrets(mine, theirs) -> None:  # type: ignore[no-untyped-def]
    values = _samples()
    if mine is shapes.is_formally_valid_jwt:
        # Only what the JWT detector's pattern can hand it: base64url text and dots (on
        # other characters detect-secrets' lenient decoder skips them, gate's need not).
        rng = random.Random(5)
        b64 = string.ascii_letters + string.digits + "_-"
        values = [v for v in values if re.fullmatch(r"[A-Za-z0-9_.=-]*", v)]
        values += [
            ".".join(
                "".join(rng.choice(b64) for _ in range(rng.randrange(0, 12)))
                for _ in range(rng.randrange(1, 4))
            )
            for _ in range(3000)
        ]
    for value in values:
        assert mine(value) is theirs(value), value


def _token(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def test_the_detectors_that_replaced_plugins_find_their_formats() -> None:
    from gate.screen.secrets import Scanner

    rng = random.Random(7)
    b64url = string.ascii_letters + string.digits + "_-"
    ibm = _token(rng, b64url, 44)
    square = "sq0csp-" + _token(rng, b64url, 43)
    chimp = _token(rng, "0123456789abcdef", 32) + "-us6"
    scanner = Scanner()
    for text, kind in (
        (f'IBM_CLOUD_API_KEY="{ibm}"', "ibm-cloud-iam-key"),
        (f"ibm_iam_token: {ibm}", "ibm-cloud-iam-key"),
        (f"square_secret = '{square}'", "square-oauth-secret"),
        (f"MAILCHIMP={chimp}", "mailchimp-api-key"),
        # Glued to other text, as detect-secrets finds them too: the vendor's
        # prefix or the 32 hex and -usN are the proof, not the word's edges.
        (f"{square}abc", "square-oauth-secret"),
        (f"s={square}_old", "square-oauth-secret"),
        (f"x{chimp}", "mailchimp-api-key"),
        (f"apikey{chimp}12", "mailchimp-api-key"),
        (f"{_token(rng, '0123456789abcdef', 8)}{chimp}", "mailchimp-api-key"),
    ):
        assert kind in {f.kind for f in scanner.scan(text)}, text
    # 45 characters: not this format at the high tier; its first 44 may be the key with a
    # letter glued on (`${KEY}x`), redacted at the low tier (detectors.loosened).
    ran_on = scanner.scan(f'IBM_CLOUD_API_KEY="{ibm}x"')
    assert [(f.kind, f.tier) for f in ran_on if f.kind == "ibm-cloud-iam-key"] == [
        ("ibm-cloud-iam-key", Tier.LOW)
    ]
    for text in (
        f"square_secret = '{square[:-1]}'",
        f"MAILCHIMP={chimp.replace('-us6', '-uk6')}",
        f"square_secret = '{square[:-1]}.x'",  # 42 characters, then not base64url
        f"MAILCHIMP={chimp[1:]}",  # 31 hex characters
        f"MAILCHIMP={chimp[:32].upper()}-us6",  # Mailchimp's keys are lowercase hex
        "MAILCHIMP=" + "g" + chimp[1:],
    ):  # 32 characters, one of them not hex
        found = {f.kind for f in scanner.scan(text)}
        assert not found & {"ibm-cloud-iam-key", "square-oauth-secret", "mailchimp-api-key"}, text
    # A Square body with text glued on is redacted whole, not its first 43 characters only.
    glued = f"s={square}Xy_9"
    spans = [(f.start, f.end) for f in scanner.scan(glued) if f.kind == "square-oauth-secret"]
    assert spans == [(2, len(glued))], spans


@pytest.mark.parametrize(
    "line",
    [
        "ibm.cloud.iam.key={v}",  # review F6: Java/Spring properties, dotted names
        "ibm.cloud.iam.api-key: {v}",
        "ibm.apikey={v}",
        "ibm_cloud_iam_api_key={v}",
        "IBMCLOUD_API_KEY={v}",
        'export IBM_CLOUD_APIKEY="{v}"',
        '{{"ibm-api-key": "{v}"}}',
        "ibm.cloud.token => '{v}'",
        "<ibm.iam.password>{v}",  # not an assignment: the name has no : or = after it
        "app.ibm.cloud.api.key = {v}",
    ],
)
def test_the_ibm_pattern_takes_the_name_forms_configs_use(line: str) -> None:
    """What detect-secrets' IbmCloudIamDetector (the rule's pattern before 2b1b18d) finds
    under a name that starts with ibm; an XML element (no `:` or `=`) is where it stops."""
    from gate.screen.secrets import Scanner

    value = _token(random.Random(line), string.ascii_letters + string.digits + "_-", 44)
    found = any(f.rule_id == "ibm.cloud-iam-key" for f in Scanner().scan(line.format(v=value)))
    assert found is not line.startswith("<"), line


@pytest.mark.parametrize(
    "line",
    [
        "ibm.cloud.iam.region={v}",  # no key, password or token in the name
        "ibm.a.very.long.dotted.name.of.many.parts.key={v}",  # past 24 characters of name
    ],
)
def test_the_ibm_pattern_keeps_its_bounds(line: str) -> None:
    from gate.screen.secrets import Scanner

    value = _token(random.Random(line), string.ascii_letters + string.digits + "_-", 44)
    found = any(f.rule_id == "ibm.cloud-iam-key" for f in Scanner().scan(line.format(v=value)))
    assert not found, line
