"""gate's copies of detect-secrets' filters agree with the installed detect-secrets, and the
regexes copied from its plugins into rules/secrets are still its plugins' regexes."""

from __future__ import annotations

import base64
import json
import random
import string

import pytest
from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
from detect_secrets.filters import heuristic
from detect_secrets.plugins.jwt import JwtTokenDetector

from gate.screen import borrowed
from gate.screen.detectors import load_detectors


def _samples() -> list[str]:
    rng = random.Random(3)
    alphabet = string.printable + "é→"
    enc = base64.urlsafe_b64encode
    jwt = ".".join(enc(json.dumps(p).encode()).decode().rstrip("=") for p in
                   ({"alg": "HS256"}, {"sub": "1"})) + ".c2ln"
    fixed = ["", "$", "{", "<x>", "{x}", "${x}", "$x}", "ABCDEF", "0123456789", "abcdefgh",
             "5f2b8c1e-9a7d-4630-8c1e-9a7d46305f2b", jwt, jwt + "a", jwt[:-1], "a.b.c", "e30.e30."]
    return fixed + ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
                    for _ in range(3000)]


@pytest.mark.parametrize(("mine", "theirs"), [
    (borrowed.is_potential_uuid, heuristic.is_potential_uuid),
    (borrowed.is_sequential_string, heuristic.is_sequential_string),
    (borrowed.is_templated_secret, heuristic.is_templated_secret),
    (borrowed.is_formally_valid_jwt, JwtTokenDetector.is_formally_valid),
])
def test_the_copies_agree(mine, theirs) -> None:  # type: ignore[no-untyped-def]
    for value in _samples():
        assert mine(value) is theirs(value), value


@pytest.mark.parametrize(("rule_id", "plugin"), [
    ("ibm.cloud-iam-key", "IbmCloudIamDetector"), ("square.oauth-secret", "SquareOAuthDetector"),
    ("mailchimp.api-key", "MailchimpDetector"),
])
def test_copied_plugin_regexes_are_the_plugins(rule_id: str, plugin: str) -> None:
    cls = next(c for c in get_mapping_from_secret_type_to_class().values()
               if c.__name__ == plugin)
    (mine,) = next(d for d in load_detectors() if d.id == rule_id).patterns
    (theirs,) = cls.denylist
    assert (mine.pattern.removeprefix("(?i)"), mine.flags) == (theirs.pattern, theirs.flags)
