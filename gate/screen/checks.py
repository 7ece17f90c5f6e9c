"""What turns a detector's match into a finding: `is_*` filters and the named checks.

Filters say what is NOT a secret (documented examples, placeholders, references, digests,
public keys); checks verify a format where it can be verified offline (JWT structure,
Basic credentials, GitHub/npm CRC32) or weigh the name a value is assigned to.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from gate.screen import mnemonic, wallets
from gate.screen.shapes import (
    is_formally_valid_jwt,
    is_potential_uuid,
    is_sequential_string,
    is_templated_secret,
)


@dataclass(frozen=True, slots=True)
class Cut:
    """keep, for the value's first `length` characters only: the rest was glued on after
    the token (`${TOKEN}x`), which the checksum tells apart."""

    length: int


# keep: the detector's tier; demote: low; structure: kept, and read as a structure the check
# verified (a key's dump), not a typed token, so the hand-typed test does not apply (a
# well-known DH prime's run of F's, a dump's column padding); None: not a finding.
Verdict = Literal["keep", "demote", "structure"] | Cut | None


# Credentials vendors print in their own docs: known to everyone, so not secrets.
DOC_EXAMPLES = (
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",  # AWS IAM guides
    "AKIAI44QH8DHBEXAMPLE",
    "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY",
    "sk_test_4eC39HqLyjWDarjtT1zdp7dc",  # Stripe API docs
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",  # jwt.io sample
    # jwt.io's example claims ({"sub":"1234567890","name":"John Doe",...}), base64url: the
    # payload of its sample token and of every tutorial copying it, whatever the key.
    "eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lI",
    # Google API keys in the samples and tests of github.com/firebase/firebase-android-sdk
    "AIzaSyabcdefghijklmnopqrstuvwxyz1234567",
    "AIzaSyAnLA7NfeLquW1tJFpx_eQCxoX-oo6YyIs",
    "AIzaSyCkEhVjf3pduRDt6d1yKOMitrUEke8agEM",
    "AIzaSyDMAScliyLx7F0NPDEJi1QmyCgHIAODrlU",
    "AIzaSyD3asb-2pEZVqMkmL6M9N6nHZRR_znhrh0",
    "AIzayDNSXIbFmlXbIE6mCzDLQAqITYefhixbX4A",
    "AIzaSyAdOS2zB6NCsk1pCdZ4-P6GBdi_UUPwX7c",
    "AIzaSyASWm6HmTMdYWpgMnjRBjxcQ9CKctWmLd4",
    "AIzaSyANUvH9H9BsUccjsu2pCmEkOPjjaXeDQgY",
    "AIzaSyA5_iVawFQ8ABuTZNUdcwERLJv_a_p4wtM",
    "AIzaSyA4UrcGxgwQFTfaI3no3t7Lt1sjmdnP5sQ",
    "AIzaSyDSb51JiIcB6OJpwwMicseKRhhrOq1cS7g",
    "AIzaSyBF2RrAIm4a0mO64EShQfqfd2AFnzAvvuU",
    "AIzaSyBcE-OOIbhjyR83gm4r2MFCu4MJmprNXsw",
    "AIzaSyB8qGxt4ec15vitgn44duC5ucxaOi4FmqE",
    "AIzaSyA8vmApnrHNFE0bApF4hoZ11srVL_n0nvY",
)
# Shapes that never occur in a random token: template syntax, masks, "your-...-here".
_PLACEHOLDER = re.compile(  # matched against the lower-cased value
    r"example|sample|dummy|placeholder|change_?me|replace_?me|your[_-]|<your|redacted"
    r"|not[_-]?a[_-]?real|x{5}|\*{3}|\.{3}|#{4}|0{10}|^\$[{(]|^\{\{|^%(?:\(\w+\))?s$"
    r"|^\$[a-z_]\w*$|(?:token|key|secret|string|value|id)[_-]?here$|[_-]here$"
)
# A printf verb ending the value or a part of it (`"sk_live_%s"`, `%v-%v`): a format
# string that makes a value, not one. A URL escape (`%3d`, `%c3`) or a `%` inside a
# token's body (`%tjH`) runs on with a letter or digit; a password's `%d!` or `%s#` runs
# on with a symbol no format string separates its parts with.
_PRINTF = re.compile(r"(?<!%)%[svqtcd](?=$|[-_./:\s])", re.IGNORECASE)
# No issued token holds these (API tokens are hex, base32/58/62/64 or url-safe, with `-_.~`
# separators): a `?` or `^` in a value under a token's or key's name marks a hand-edited
# or corrupted one. A password may hold anything, so not under its names.
_NOT_ISSUED = re.compile(r"[?^]")
# One character twelve times over (`glc_1111...`, `xoxc-8888...`, an all-zero age key
# `AGE-SECRET-KEY-1QQQ...`): a random body holds such a run about once in 62^11. `A` (zero
# bits), `/`, `+` and `=` are left out: base64 of binary keys and DER has long runs of them;
# so is white space, which is layout (a key block indented in YAML, a dump's columns).
_RUN = re.compile(r"([^A/+=\s])\1{11,}")
# Right after a value: the rest of it masked (`xoxp-5723...-##########`).
_MASKED = re.compile(r"#{3}|\*{3}|x{5}|X{5}")
_ASCENDING = re.compile(
    "|".join("abcdefghijklmnopqrstuvwxyz"[i : i + 7] for i in range(20))
    + "|"
    + "|".join("0123456789"[i : i + 7] for i in range(4))
)
# Human-chosen stand-ins, for values that follow a name (KEY=VALUE, -p..., user:pass@).
_WEAK = frozenset(
    {
        "password",
        "passwd",
        "secret",
        "token",
        "changeit",
        "admin",
        "root",
        "test",
        "testing",
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "yes",
        "no",
        "string",
        "str",
        "bytes",
        "secretstr",
        "optional",
        "required",
        "default",
        "empty",
        "hidden",
        "masked",
        "value",
        "foo",
        "bar",
        "baz",
        "qwerty",
        "letmein",
        "hunter2",
        "pass",
        "pwd",
        "todo",
        "tbd",
    }
)
_WEAK_PARTS = ("password", "passw0rd", "passwd", "secret", "changeme")
_REFERENCE = re.compile(
    r"^[$%&*!@](?:[a-z_][a-z0-9_]*|[A-Z_][A-Z0-9_]*|[a-z]+(?:[A-Z][a-z]+)+)%?$"
    r"|^[{<(]|^[$%][{(]|[()\[\]{}]|^_*[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$"
    r"|^(?:os\.|process\.env|env\.|ENV\[|getenv|secrets\.|vars\.)"
    r"|^[A-Za-z_]\w*(?:(?:\.|::|->)[A-Za-z_]\w*)+$"
)
_DIGEST = re.compile(
    r"^(?:sha(?:1|224|256|384|512)|md5)[-:=]|^\$(?:2[aby]|argon2\w*|[156])\$"
    r"|^pbkdf2_",
    re.IGNORECASE,
)
_PUBLIC = re.compile(r"^(?:ssh-(?:rsa|ed25519|dss)|ecdsa-sha2-|pk_(?:live|test)_|age1|npub1)")
_PATH = re.compile(
    r"^(?:\.{0,2}/|~[/\\]|[A-Za-z]:[\\/])|^[\w.-]+\.(?:pem|key|json|ya?ml|txt|p12"
    r"|pfx|crt|cer|der|jks|env|ini|cfg|conf|toml|pub)$|/[\w.-]+\.\w{2,4}$"
)
_OTHER = re.compile(
    r"^[a-z][a-z0-9+.-]*://|^[+-]?\d+(?:\.\d+)?[a-z]{0,3}$|^#[0-9a-f]{3,8}$", re.IGNORECASE
)
# A name with a date (`counting-2024-11-01`, `token-efficient-tools-2025-02-19`, an API
# version `2023-06-01`, a model `sonnet-20250929`): Anthropic's beta names and model ids
# follow a `token-`/`secret-` keyword in docs and code an agent reads. Not under a
# password's name: people choose `summer-2024-06-01`.
_DATED = re.compile(
    r"^(?:[A-Za-z]+[-_.])*[A-Za-z]*[-_.]?(?:19|20)\d\d(?:-[01]\d-[0-3]\d|[01]\d[0-3]\d)$"
)


def _is_dated(value: str) -> bool:
    return value[-2:].isdigit() and bool(_DATED.match(value))  # the regex only if it may


_LITERAL_CONTEXT = frozenset(" \t\n\r?&;→\"'")
_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")

_SENSITIVE = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "secrets",
    "token",
    "apikey",
    "pwd",
    "credential",
    "credentials",
)
_SENSITIVE_WORDS = frozenset({"pass", "pw", "psw", "auth", "creds", "pat"})
_STRONG_KEY = frozenset(
    {
        "api",
        "secret",
        "private",
        "access",
        "auth",
        "signing",
        "sign",
        "encryption",
        "encrypt",
        "crypt",
        "master",
        "client",
        "app",
        "account",
        "license",
        "session",
        "service",
        "webhook",
        "hmac",
        "jwt",
        "shared",
        "consumer",
        "subscription",
        "admin",
        "deploy",
        "write",
        "server",
    }
)
_STRUCTURAL_KEY = frozenset(
    {
        "primary",
        "foreign",
        "cache",
        "sort",
        "partition",
        "idempotency",
        "row",
        "hash",
        "range",
        "object",
        "map",
        "dict",
        "lookup",
        "group",
        "route",
        "public",
        "unique",
        "composite",
        "shard",
        "dedup",
        "dedupe",
        "i18n",
        "translation",
        "message",
        "list",
        "item",
        "query",
        "s3",
        "parent",
        "child",
        "join",
        "index",
        "order",
        "search",
        "field",
        "column",
        "table",
        "meta",
        "label",
        "name",
        "config",
        "setting",
        "env",
        "entry",
        "node",
        "record",
        "lock",
        "bucket",
        "file",
        "path",
        "kms",
        "gpg",
        "pgp",
        "cursor",
        "react",
        "v",
        "the",
        "hot",
        "shortcut",
        "sub",
        "redis",
        "storage",
        "registry",
        "ssh",
        "host",
        "known",
        "trusted",
        "anon",
        "anonymous",
        "site",
        "recaptcha",
        "websocket",
    }
)
_QUALIFIERS = frozenset(
    {
        "url",
        "uri",
        "urls",
        "endpoint",
        "host",
        "path",
        "file",
        "filename",
        "dir",
        "name",
        "type",
        "id",
        "ids",
        "len",
        "length",
        "count",
        "size",
        "limit",
        "ttl",
        "timeout",
        "expiry",
        "expires",
        "expiration",
        "lifetime",
        "age",
        "env",
        "var",
        "field",
        "header",
        "prefix",
        "suffix",
        "format",
        "policy",
        "mode",
        "enabled",
        "enable",
        "required",
        "hash",
        "digest",
        "sha",
        "sha1",
        "sha256",
        "md5",
        "hint",
        "label",
        "placeholder",
        "regex",
        "pattern",
        "min",
        "max",
        "ref",
        "arn",
        "kind",
        "provider",
        "version",
        "algorithm",
        "alg",
        "scheme",
        "location",
        "source",
        "at",
        "used",
        "issued",
        "created",
        "updated",
        "method",
        "manager",
        "param",
        "params",
        "question",
        "rotation",
        "strategy",
        "validator",
        "validation",
        "strength",
        "rules",
        "helper",
        "class",
        "module",
        "callback",
        "handler",
        "index",
        "fingerprint",
        "checksum",
        "store",
        "exists",
        "set",
        "usage",
        "budget",
        "estimate",
        "text",
        "vars",
        "identifier",
        "period",
        "names",
        "types",
        "settings",
        "options",
        "config",
        "range",
    }
)
_NEGATIVE_WORDS = frozenset(
    {
        "public",
        "publishable",
        "example",
        "sample",
        "dummy",
        "fake",
        "mock",
        "page",
        "next",
        "continuation",
        "cursor",
        "sync",
        "tokenizer",
        "tokens",
        "max",
        "min",
        "num",
        "is",
        "has",
        "use",
        "show",
        "allow",
        "should",
        "no",
        "skip",
        "csrf",
        "xsrf",
        "input",
        "output",
    }
)


def is_example(value: str) -> bool:
    return any(e in value for e in DOC_EXAMPLES)


def is_placeholder(value: str, password: bool = False) -> bool:
    """Template syntax (`${VAR}`, `{{ x }}`, `<token>`, `$API_KEY`), masks, `YOUR_...`,
    printf formats. Under a password's name (`password`) a format is read more narrowly."""
    return (
        bool(_PLACEHOLDER.search(value.lower()))
        or _is_format(value, password)
        or _mostly_runs(value)
        or is_templated_secret(value)
    )


def _is_format(value: str, password: bool) -> bool:
    """A printf format string (`sk_live_%s`, `%v-%v`, `"Bearer <30 chars>%s"`). People
    choose passwords of any characters, and a random one ends in a verb (`...%d`, `...%S`)
    about once in 400 at 16 characters: under a password's name a value is a format only
    when what is left without its verbs is a prefix or separators, not eight or more
    characters a password is made of."""
    if not _PRINTF.search(value):
        return False
    if not password:
        return True
    rest = _PRINTF.sub("", value)
    return not (len(rest) >= 8 and entropy(rest) >= 2.5 and is_plausible_value(rest, 8))


def _mostly_runs(value: str) -> bool:
    """Half the value or more is runs of one character (`glc_111...1=`, an all-zero key).
    A run in a shorter part of it only demotes (is_made_up): a real token with a run glued
    on is still redacted, so padding one never gets it past."""
    return sum(m.end() - m.start() for m in _RUN.finditer(value)) * 2 >= len(value)


def is_made_up(value: str) -> bool:
    """A body typed by hand (`abc123xyz-456def789ghij-klmnopqrstuvwx`, `xoxc-888888888888-
    ...`): seven letters or digits in alphabet order, which a random token holds about once
    in ten million, or twelve of one character; or letters and digits counted up in turn
    (`a1b2c3d4e5f6a7b8`, `abc123def456ghi789`, `Aa1Bb2Cc3Dd4Ee5`: _interleaved). Still
    redacted (it may be a real value someone chose), never asked about."""
    lower = value.lower()
    return bool(_ASCENDING.search(lower) or _RUN.search(value)) or _interleaved(lower)


def _interleaved(lower: str) -> bool:
    """Read apart, the letters hold seven in alphabet order or the digits eight
    (`a1b2c3d4e5f6g7h8` -> `abcdefgh`, `12345678`), a letter or digit said twice in a row
    counted once (`aa1bb2cc3`). In a random body of 64 characters the letters do so about
    once in ten million, the digits about once in a hundred thousand."""
    letters = "".join(c for c in lower if "a" <= c <= "z")
    digits = "".join(c for c in lower if c.isdigit())
    return _ascends(letters, 7) or _ascends(digits, 8)


def _ascends(chars: str, n: int) -> bool:
    run, last = 1, ""
    for c in chars:
        if c == last:
            continue
        run = run + 1 if last and ord(c) == ord(last) + 1 else 1
        if run >= n:
            return True
        last = c
    return False


def is_masked(m: re.Match[str], end: int) -> bool:
    """The value stops at a separator and a mask follows (`xoxp-5723...-##########`): the
    rest of the token is hidden, and what is left is its public prefix. (A whole token
    with a mask glued on does not end at a separator, so it is still found.)"""
    return end > 0 and m.string[end - 1] in "-_." and bool(_MASKED.match(m.string, end))


def is_reference(value: str) -> bool:
    """Code or config that names a secret instead of holding it (`os.environ[...]`,
    `process.env.X`, `self.token`, `get_secret()`, YAML anchors and tags). A dotted
    value whose parts are random (`oNKE6BzK...vuau.kqvuAuEk...`, signed session tokens)
    is a token in parts, not attribute access: no identifier reads like that."""
    m = _REFERENCE.search(value)
    if m is None:
        return False
    if "." in value and m.group() == value and _DOTTED.match(value):
        return not any(_random_part(p) for p in value.split("."))
    return True


_DOTTED = re.compile(r"^[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+$")
_APART = re.compile(r"\d\D+\d")


def _random_part(part: str) -> bool:
    """20+ characters mixing upper and lower case with digits scattered among them, or 16+
    of one case with a quarter of them digits scattered among the letters (hex and
    base36 bodies: `cbe5985d07804065b46efaf1daa82834.ZLV4...`, Dynatrace's parts), which no
    identifier has."""
    if len(part) < 16 or not _APART.search(part):
        return False
    upper = sum(c.isupper() for c in part)
    lower = sum(c.islower() for c in part)
    digits = sum(c.isdigit() for c in part)
    if digits * 4 >= len(part) and upper + lower >= 4 and not (upper and lower):
        return True
    return len(part) >= 20 and upper >= 3 and lower >= 3 and digits >= 3


def is_digest(value: str) -> bool:
    """SRI/lockfile integrity strings, docker digests, password hashes."""
    return bool(_DIGEST.search(value))


def is_public_key(value: str) -> bool:
    return bool(_PUBLIC.search(value))


def entropy(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def is_plausible_value(value: str, min_length: int = 6) -> bool:
    """A value that could be a password or key: not a word, number, path, URL or reference;
    at least two of letters, digits, symbols, or long, varied and unpronounceable (so
    `AccessTokenProvider` or `layer_target_range` is code, not a key)."""
    lower = value.lower()
    if (
        len(value) < min_length
        or lower.rstrip(":;,.") in _WEAK  # `token:` is the word, not a value
        or any(w in lower for w in _WEAK_PARTS)
    ):
        return False
    if (
        is_reference(value)
        or is_digest(value)
        or is_public_key(value)
        or _PATH.search(value)
        or _OTHER.search(value)
        or is_sequential_string(value)
        or len(set(value)) < 4
    ):
        return False
    classes = (
        any(c.isalpha() for c in value)
        + any(c.isdigit() for c in value)
        + any(not c.isalnum() and c not in "-_." for c in value)
    )
    if classes >= 2:
        return not _is_phrase(value)
    letters = [c for c in lower if c.isalpha()]
    vowels = sum(c in "aeiouy" for c in letters) / max(1, len(letters))
    return len(value) >= 16 and entropy(value) >= 3.0 and vowels < 0.3


def _never_plausible(value: str, min_length: int) -> bool:
    """A value `is_plausible_value(value, n)` rejects for every n >= `min_length`, told
    from its length and alphabet alone: shorter than that, or shorter than 16 and of one
    class (letters only, or digits only, separators aside), which that test needs 16 for.
    Log words (`token refreshed`) and type names (`api_key: SecretStr`) end here, before
    a name is built for them."""
    n = len(value)
    if n < min_length:
        return True
    if n >= 16:
        return False
    core = value.replace("-", "").replace("_", "").replace(".", "")  # (translate: 30x slower)
    return not core or core.isalpha() or core.isdigit()


def _is_phrase(value: str) -> bool:
    """`token_sha256_to_refresh`, `api-version-2`: words joined like an identifier, with no
    random-looking part (as `prod-api-5f2b8c1e9a7d4630` has)."""
    parts = re.split(r"[_-]", value)
    if len(parts) < 2 or value not in (value.lower(), value.upper()):
        return False
    if any(len(p) >= 8 and not p.isalpha() and not p.isdigit() for p in parts):
        return False
    words = sum(1 for p in parts if p.isalpha() and len(p) >= 2)
    return words * 2 > len(parts)


_DIGITS = "0123456789"


@lru_cache(maxsize=4096)  # names recur: api_key, token, max_tokens...
def name_strength(name: str) -> int:
    """2: a name that says secret (`DB_PASSWORD`, `apiKey`, `client_secret`); 1: `*_KEY`
    whose value must also look random (`STRIPE_KEY`); 0: not sensitive (`max_tokens`,
    `token_url`, `primary_key`, `public_key`)."""
    # A number glued on counts for nothing (`sumoKey1`, `token2`, `password01`).
    words = [w.lower().rstrip(_DIGITS) or w for w in _SPLIT.split(name) if w]
    if not words or words[-1] in _QUALIFIERS or _NEGATIVE_WORDS.intersection(words):
        return 0
    for i, w in enumerate(words):
        if w in _SENSITIVE_WORDS or w.endswith(_SENSITIVE):
            return 2
        if w.endswith("key") and w[:-3] in _STRONG_KEY:
            return 2
        if w in ("key", "keys") and i:
            prev = words[i - 1]
            if prev in _STRONG_KEY:
                return 2
            if prev not in _STRUCTURAL_KEY and not prev.isdigit():
                return 1
    return 0


def _assignment(m: re.Match[str], value: str) -> Verdict:
    name = m.group("name")
    strength = name_strength(name) or _query_key(m, name)
    if not strength:
        return None
    if _never_plausible(value, 6 if strength == 2 else 16) and not (
        strength == 2 and says_password(name) and is_passphrase(value)
    ):
        return None  # decided by length and alphabet (only a passphrase gets past that)
    if "quote" in m.re.groupindex and m.group("quote") is None:
        # Unquoted values are literals in env files, YAML, INI, headers, query strings and
        # connection strings; in code (`e.password=t.pw`, `f(token=tok)`, `key = other_key`)
        # they are expressions. A dotted name is a literal's only at a line's start, as in
        # Java properties (`spring.datasource.password=V`, `app.access_token=V`); indented,
        # it is an attribute in code (`self.token=tok`).
        before = m.string[m.start("name") - 1] if m.start("name") else "\n"
        literal = before in _LITERAL_CONTEXT and ("." not in name or before in "\n\r")
        if not literal and not (before in "=,D" and _in_flag(m)):
            return None
    elif _opens_before(m):
        return None
    listed = "," in m.string[m.end("name") : m.start("secret")]  # `f("NAME", V)`
    if not is_plausible_value(value, 6 if strength == 2 else 16) and not (
        strength == 2
        and says_password(name)
        and is_passphrase(value)
        and not _in_prose(m)
        and not listed
    ):  # `{"kind": "secret", "decision": ...}`: a comma's next item is a word, not a value
        return None
    if strength == 1 and (entropy(value) < 3.0 or is_potential_uuid(value)):
        return None
    if _spells(name, value) or (_NOT_ISSUED.search(value) and not says_password(name)):
        return None
    if _is_dated(value) and not says_password(name):  # `summer-2024-06-01` may be one
        return None
    if (
        listed
        and _KWARG.fullmatch(value)
        and m.string[m.end("secret") : m.end("secret") + 1] in ('"', "'")
    ):
        # `f(x, "github-token", session="s")`: the next keyword argument, its value quoted
        # after the `=` (base64 ending in `=`, `"db_password",c2Vj...=`, is a value).
        return None
    return "keep"


def _in_flag(m: re.Match[str]) -> bool:
    """A NAME=V pair given as a command-line flag's value: a Java system property
    (`-Ddb.password=V`), `--from-literal=password=V`, `--set-env-vars A=1,DB_PASS=V`."""
    text, start = m.string, m.start("name")
    if text[max(0, start - 2) : start] == "-D":
        return start < 3 or text[start - 3] in " \t\n\"'"
    # The word holding the name, read back 200 characters at most (minified code has no
    # blank for a megabyte: no flag is that long).
    floor = max(0, start - 200)
    lo = max(text.rfind(c, floor, start) for c in " \t\n")
    if lo < 0 and floor:
        return False
    word = text[lo + 1 : start]
    if _FLAG_WORD.fullmatch(word):
        return True
    return bool(_PAIRS.fullmatch(word)) and bool(_FLAG_BEFORE.search(text, max(0, lo - 80), lo + 1))


# `--flag=` and the pairs before this one; pairs after a flag and a blank.
_FLAG_WORD = re.compile(r"--?[A-Za-z][\w-]*=(?:[\w.-]+=[^\s,]*,)*")
_PAIRS = re.compile(r"(?:[\w.-]+=[^\s,]*,)+")
_FLAG_BEFORE = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*[ \t]+\Z")


_KWARG = re.compile(r"[A-Za-z_]\w*=")


def _in_prose(m: re.Match[str]) -> bool:
    """An unquoted value of words that a sentence goes on after (`the keyword pass:
    invisible characters`, `"secrets: settings loosened"`): in an env file, YAML or INI a
    passphrase ends its line (a comment after it aside)."""
    if "quote" in m.re.groupindex and m.group("quote") is not None:
        return False
    text, end = m.string, m.end("secret")
    return bool(_PROSE_GOES_ON.match(text, end))


# After a value: a space, then a lower-case word (not a flag, a path, `#` or another NAME=).
_PROSE_GOES_ON = re.compile(r"[ \t]+[a-z]+(?![\w=./-])")


def _query_key(m: re.Match[str], name: str) -> int:
    """`?key=V` or `&key=V` in a URL is how many web APIs take their key (Google's, Steam's,
    most weather and data APIs): a `*_KEY` (1), whose value must look random, where a bare
    `key` elsewhere (`key = other_key`, a dict's key) says nothing."""
    start = m.start("name")
    return int(name.lower() == "key" and start > 0 and m.string[start - 1] in "?&")


def _spells(name: str, value: str) -> bool:
    """The value is the name again (`KeyMeshing = "id-KeyMeshing"`): an identifier."""
    v = re.sub(r"[^a-z0-9]", "", value.lower())
    return len(v) >= 12 and v in re.sub(r"[^a-z0-9]", "", name.lower())


# What may stand between the words written before a keyword (`Your API key`).
_BETWEEN = re.compile(r"[ \t._-]+")
_NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \t._-"


def _keyword(m: re.Match[str], value: str) -> Verdict:
    """A keyword and a value with no assignment between them: the words before the
    keyword make the name (`Your API key` -> Your_API_key), and the name decides as an
    assigned one does, with longer values asked for (a sentence is not code)."""
    if _never_plausible(value, 8):  # no name makes it one: decided before building it
        return None
    start, text = m.start("word"), m.string
    word = m.group("word")[:-1]
    before = text[start - 1] if start else " "
    if before.isalpha() and before.islower() and word[0].islower():
        return None  # inside a word: monkey, hockey, turnkey
    head = text[max(0, start - 60) : start]
    head = head[len(head.rstrip(_NAME_CHARS)) :]  # back to the last character no name holds
    words = _BETWEEN.split(head)  # the last one is glued to the keyword (fooKEY)
    name = "_".join([*words[-3:-1], words[-1] + word])
    strength = name_strength(name)
    if not strength or _spells(head + word, value) or _is_dated(value):
        return None
    if _NOT_ISSUED.search(value) and not says_password(name):
        return None
    if strength == 1 and (len(value) < 16 or is_potential_uuid(value) or entropy(value) < 3.0):
        return None
    minimum = 8 if says_password(name) else 12
    return "keep" if is_plausible_value(value, minimum) else None


def says_password(name: str) -> bool:
    lower = name.lower()
    return any(w in lower for w in ("pass", "pwd", "secret"))


def is_passphrase(value: str) -> bool:
    """A password made of letters only (`correcthorsebattery`, `Sunflower`), or of words
    joined by one separator (`correct-horse-battery-staple`, `Unsworn_Crate_Pushy7`: what
    the diceware-style generators of 1Password and Bitwarden make), the kind people
    choose: long enough, not a stand-in word or phrase (`change-me-now`), not an
    identifier (`getPassword`)."""
    lower = value.lower()
    if not value.isascii() or lower in _WEAK or any(w in lower for w in _WEAK_PARTS):
        return False
    if value.isalpha():
        return len(value) >= 8 and not _CAMEL.search(value) and len(set(lower)) >= 5
    return _is_word_phrase(value)


_CAMEL = re.compile(r"[a-z][A-Z]")
# Three or more words of two letters or more, joined by one `-` or `_` throughout; a word
# may end in digits, or one part be digits. (A `.` joins module paths and host names, a
# space ends an unquoted value: neither is read as a separator here.)
_WORD_PHRASE = re.compile(
    r"[A-Za-z]{2,}(?P<sep>[-_])[A-Za-z]{2,}\d*(?:(?P=sep)(?:[A-Za-z]{2,}\d*|\d+))+", re.ASCII
)
# Words that make a phrase a stand-in (`your-db-password-here`, `replace_with_real_one`).
_STAND_IN_WORDS = frozenset(
    {
        "your",
        "here",
        "change",
        "replace",
        "example",
        "sample",
        "dummy",
        "fake",
        "placeholder",
        "insert",
        "enter",
        "redacted",
        "todo",
        "fixme",
        "foo",
        "bar",
        "baz",
        "xxx",
        "not",
        "real",
        "set",
        "me",
        "goes",
    }
)


def _is_word_phrase(value: str) -> bool:
    core = value.replace("-", "").replace("_", "")
    if len(core) == len(value) or not core.isalnum():  # no regex for what cannot be one
        return False
    if not _WORD_PHRASE.fullmatch(value) or is_reference(value):  # DEFAULT_LAST_PASS
        return False
    words = [w.rstrip(_DIGITS) for w in re.split(r"[-_]", value)]
    words = [w for w in words if w]
    letters = "".join(words).lower()
    return (
        len(letters) >= 15  # three short words (`ramp_sec_short`) read as a stand-in
        and len(set(letters)) >= 6
        # Each word in one case (`horse`, `Horse`, `HORSE`): `getUser-byId-now` is code.
        and all(w.islower() or w.istitle() or w.isupper() for w in words)
        and not _STAND_IN_WORDS.intersection(w.lower() for w in words)
        # An identifier's words (`aws_session_token`, `client-access-key`): a name.
        and not _NAME_WORDS.intersection(w.lower() for w in words)
    )


_NAME_WORDS = frozenset(
    {
        "key",
        "keys",
        "token",
        "tokens",
        "secret",
        "secrets",
        "session",
        "access",
        "api",
        "auth",
        "id",
        "ids",
        "name",
        "url",
        "uri",
        "host",
        "user",
        "username",
        "email",
        "client",
        "env",
        "config",
        "value",
        "values",
        "field",
        "type",
    }
)


def _firebase(m: re.Match[str], value: str) -> Verdict:
    """Google API keys in a Firebase web config are public by design (they identify the
    project to the browser): redacted, never asked about."""
    around = m.string[max(0, m.start() - 400) : m.end() + 400]
    return "demote" if any(w in around for w in _FIREBASE) else "keep"


_FIREBASE = ("authDomain", "firebaseapp.com", "firebaseConfig", "messagingSenderId")


def _opens_before(m: re.Match[str]) -> bool:
    """`"x-token-auth:"+e.token`: the name sits in a string whose closing quote was taken
    for the value's opening one."""
    if "kq" not in m.re.groupindex or m.group("kq") is not None or not m.start("name"):
        return False
    return m.string[m.start("name") - 1] == m.group("quote")


def _name_value(m: re.Match[str], value: str) -> Verdict:
    """A value's field (`"value": V`) whose object names it in a field before it (`"name":
    "DB_PASSWORD", `, `- name: API_TOKEN` on the line above): the name decides as an
    assigned one's does; a cookie's (a HAR's `{"name": "sessionid", "value": V}`) as a
    session cookie's, its value random-looking."""
    if _never_plausible(value, 6) and (len(value) < 8 or not is_passphrase(value)):
        return None  # no name makes it one: decided before looking for the name
    text, start = m.string, m.start()
    fields = [f.start() for f in _NAME_FIELD.finditer(text, max(0, start - 240), start)]
    for pos in reversed(fields):  # the nearest name first
        full = _NAME_THEN_VALUE.match(text, pos)
        if full is not None and full.span("secret") == m.span("secret"):
            break
    else:
        return None
    verdict = _assignment(full, value)
    if verdict is not None or not _SESSION_NAME.search(full.group("name")):
        return verdict
    random_enough = entropy(value) >= 3.0 and is_plausible_value(value, 16)
    return "keep" if random_enough and not is_potential_uuid(value) else None


# The name's field, then up to three other fields of the same object (`"Type":
# "SecureString"`), then the value's.
_NAME_FIELD = re.compile(
    r"""(?<![\w-])["']?(?:[Nn]ame|NAME|[Kk]ey|KEY|ParameterKey)[ \t]?["']?[ \t]*:"""
)
_NAME_THEN_VALUE = re.compile(
    r"""(?x)
    ["']?(?:[Nn]ame|NAME|[Kk]ey|KEY|ParameterKey)[ \t]?["']?[ \t]*:[ \t]*
    (?P<nq>["'])?(?P<name>[\w./:-]{1,120}?)(?(nq)[ ]?(?P=nq))
    (?:[ \t]*,?\s*["']?\w{1,20}[ \t]?["']?[ \t]*:[ \t]*
       (?:"[^"\n]{0,80}"|'[^'\n]{0,80}'|[\w.-]{1,40})){0,3}
    [ \t]*,?\s*["']?(?:[Vv]alue|VALUE|ParameterValue)[ \t]?["']?[ \t]*:[ \t]*
    (?P<quote>["'])?(?P<secret>(?(quote)[^\s"'`\\]{1,1024}|[^\s"'`\\,;&}]{1,1024}))"""
)
_SESSION_NAME = re.compile(r"(?i)sess|sid|auth|token|jwt")


def _cookie(m: re.Match[str], value: str) -> Verdict:
    """A cookie after the first (`Cookie: csrftoken=...; sessionid=V`) is one only on a
    line holding a Cookie header before it: elsewhere `; token=V` is anything."""
    if "h" not in m.re.groupindex or m.group("h") is not None:
        return "keep"
    text, start = m.string, m.start()
    line = text.rfind("\n", 0, start) + 1
    return "keep" if _COOKIE_HEADER.search(text, line, start) else None


_COOKIE_HEADER = re.compile(
    r"(?i:\b(?:set-)?cookie)[\"']?[ \t]*[:=]|(?i:\bcookie)[ \t]?[\"']?[ \t]*,"
)


def _value(m: re.Match[str], value: str) -> Verdict:
    return "keep" if is_plausible_value(value) else None


def _jwt(m: re.Match[str], value: str) -> Verdict:
    """A JWT whose parts decode (detect-secrets' check), signed (alg not none), and not a
    public Supabase-style `anon` key."""
    if not is_formally_valid_jwt(value):
        return None
    header, payload = (json.loads(_b64url(part)) for part in value.split(".")[:2])
    if not isinstance(header, dict) or str(header.get("alg", "none")).lower() == "none":
        return None
    if isinstance(payload, dict) and payload.get("role") == "anon":
        return None
    return "keep"


def _basic_auth(m: re.Match[str], value: str) -> Verdict:
    """`Authorization: Basic` whose credentials decode to user:password."""
    try:
        text = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None
    _, sep, password = text.partition(":")
    if not sep or not password.isprintable() or password.lower() in _WEAK:
        return None
    return None if any(w in password.lower() for w in _WEAK_PARTS) else "keep"


# A private component of a key dump and at least 16 of its bytes: what a key is read from.
_PRIVATE_PART = re.compile(
    r"(?<![\w-])(?:privateExponent|prime1|priv|private-key):(?>(?:\s|\d{1,7}→)+)"
    r"(?:[0-9a-f]{2}:(?>(?:\s|\d{1,7}→)*)){15}[0-9a-f]{2}"
)


def _key_dump(m: re.Match[str], value: str) -> Verdict:
    """`openssl ... -text` of a private key: one of its private components is printed, not
    only the header (a man page's `Private-Key:` line) or the public ones."""
    return "structure" if _PRIVATE_PART.search(value) else None


_LONG_INTEGER = re.compile(r"prim: INTEGER +:[0-9A-F]{64,}")
_WRAPPED_KEY = re.compile(r"prim: OCTET STRING +\[HEX DUMP\]:[0-9A-F]{40,}")


def _asn1_key(m: re.Match[str], value: str) -> Verdict:
    """`openssl asn1parse` of a private key prints its material: a traditional RSA or DSA
    key's integers (two of 32+ bytes at least), or the key a PKCS#8 or SEC1 one wraps."""
    if _WRAPPED_KEY.search(value) or len(_LONG_INTEGER.findall(value)) >= 2:
        return "structure"
    return None


_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def base62(n: int, width: int = 6) -> str:
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = _B62[r] + out
    return out.rjust(width, "0")


def _crc32(m: re.Match[str], value: str) -> Verdict:
    """GitHub and npm tokens end with a base62 CRC32 of their random part: a token whose
    checksum fails is a fake or a typo, kept only in the low tier. A longer run whose
    first 36 characters hold is the token with letters glued after it (`${TOKEN}x`): the
    finding is cut to the token."""
    prefix, body = value.split("_", 1)
    if base62(zlib.crc32(body[:-6].encode())) == body[-6:]:
        return "keep"
    token = body[:_CRC_BODY]
    if len(body) > _CRC_BODY and base62(zlib.crc32(token[:-6].encode())) == token[-6:]:
        return Cut(len(prefix) + 1 + _CRC_BODY)
    return "demote"


_CRC_BODY = 36  # 30 random characters and 6 of checksum
_BODY_GLUE = 12  # characters glued to a bare body that are still read around it
_HEX = frozenset("0123456789abcdefABCDEF")
_BLOB_EDGES = frozenset("+/")  # standard base64: a stretch between them is inside a blob
_WORD_EDGES = frozenset("-_")  # base64url, or a longer name, when a long run goes on past


def crc_bodies(reading: wallets.Reading) -> Iterator[tuple[int, int]]:
    """GitHub's and npm's tokens without their prefix (`${TOKEN#ghp_}`, `cut -c5-`, a
    token's prefix and body sent apart): 36 letters and digits whose last 6 are the base62
    CRC32 of the first 30. A random stretch passes once in 62**6 (5.7e10), so no keyword
    is needed (one written backwards is read too). Read: a stretch of 36, or the token
    with up to 12 characters glued on; not one inside a base64 blob (a `+` or `/` at its
    edge, or a `-` or `_` with a long run past it), nor one of hex digits alone (a
    digest)."""
    view = reading.view
    for start, end in reading.alnum_stretches(_CRC_BODY):
        if end - start > _CRC_BODY + _BODY_GLUE or _in_a_blob(view, start, end):
            continue
        if all(c in _HEX for c in view[start:end]):
            continue
        for at in range(start, end - _CRC_BODY + 1):
            body = view[at : at + _CRC_BODY]
            if _crc_holds(body) or _crc_holds(body[::-1]):  # as sent, or written backwards
                yield at, at + _CRC_BODY
                break


def _crc_holds(body: str) -> bool:
    # A CRC32 is under 62**6 / 13: its 6 base62 digits start with 0 to 4, a test that
    # spares 11 in 12 random windows the CRC and the conversion.
    return body[-6] in "01234" and base62(zlib.crc32(body[:-6].encode())) == body[-6:]


def _in_a_blob(view: str, start: int, end: int) -> bool:
    for edge, beyond, step in ((start - 1, start - 2, -1), (end, end + 1, 1)):
        if not 0 <= edge < len(view):
            continue
        c = view[edge]
        if c in _BLOB_EDGES:
            return True
        if c in _WORD_EDGES:
            run, i = 0, beyond
            while 0 <= i < len(view) and view[i].isascii() and view[i].isalnum() and run < 16:
                run += 1
                i += step
            if run >= 16:
                return True
    return False


def _atlassian_dc(m: re.Match[str], value: str) -> Verdict:
    """A Bitbucket Data Center token's body is 33 bytes in base64: the token's id in
    twelve digits, a colon, the secret. A random body decodes so about once in 10^17: one
    that does not is a fake or a typo, kept only in the low tier."""
    try:
        raw = base64.b64decode(value.split("-", 1)[1], validate=True)
    except ValueError:
        return "demote"
    return "keep" if raw[:12].isdigit() and raw[12:13] == b":" else "demote"


def _b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


# Shared access signature fields whose values Azure checks (create-service-sas,
# create-account-sas): the permission letters and the allowed IP or IP range.
_SAS_FIELD = re.compile(r"(?<![A-Za-z0-9_])(sp|sip)=([^&\s\"'<>]*)")
_SAS_PERMISSIONS = re.compile(r"[racwdxyltfmeopiu]+")
_SAS_IP = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}(?:-\d{1,3}(?:\.\d{1,3}){3})?")


def _sas(m: re.Match[str], value: str) -> Verdict:
    """A signed SAS query whose permissions or IP range Azure would refuse (`sp=rqx`,
    `sip=168.1.6`) was never issued: not a credential. The fields before `sv=` are read
    back to where the query starts."""
    text, start = m.string, m.start("secret")
    lo = start
    while lo > 0 and start - lo < 600 and text[lo - 1] not in "?\n\t \"'<>`":
        lo -= 1
    for field, v in _SAS_FIELD.findall(text, lo, m.end("secret")):
        if not (_SAS_PERMISSIONS if field == "sp" else _SAS_IP).fullmatch(v):
            return None
    return "keep"


CHECKS: dict[str, Callable[[re.Match[str], str], Verdict]] = {
    "sas": _sas,
    "assignment": _assignment,
    "keyword": _keyword,
    "value": _value,
    "cookie": _cookie,
    "name-value": _name_value,
    "jwt": _jwt,
    "key-dump": _key_dump,
    "asn1-key": _asn1_key,
    "basic-auth": _basic_auth,
    "crc32": _crc32,
    "atlassian-dc": _atlassian_dc,
    "firebase": _firebase,
    "xprv": wallets.xprv,
    "nsec": wallets.nsec,
    "minisign-key": wallets.minisign_key,
    "signify-key": wallets.signify_key,
    "wireguard": wallets.wireguard,
    "evm-key": wallets.evm_key,
}
# Detectors with no keyword (`finder:`): each function reads the whole string, at C speed
# where nothing like its secret is, and gives the spans it verified.
FINDERS: dict[str, Callable[[wallets.Reading], Iterator[tuple[int, int]]]] = {
    "bip39": mnemonic.spans,
    "wif": wallets.wif_spans,
    "crc-body": crc_bodies,
    "solana-keypair": wallets.keypair_spans,
}
