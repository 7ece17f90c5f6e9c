"""The values of a denied file that could identify it: what the denied-file index looks for."""

from __future__ import annotations

import re
from collections.abc import Iterator

MIN_UNIT = 6
# Values too common to say anything about the file they came from: booleans, empty-ish
# words, environment and log-level names, and the stock names of local services. Written
# in docs/guarantees.md; keep the two in step.
STOP_WORDS = frozenset(
    {
        "true",
        "false",
        "null",
        "none",
        "enabled",
        "disabled",
        "production",
        "development",
        "staging",
        "testing",
        "default",
        "localhost",
        "warning",
        "verbose",
        "postgres",
        "postgresql",
        "mysql",
        "sqlite",
        "redis",
        "mongodb",
        "public",
        "private",
        "changeit",
        "example",
        "undefined",
        "unknown",
        "always",
        "never",
        "latest",
        "stable",
        "master",
        "origin",
        "primary",
        "secondary",
        "internal",
        "external",
        "required",
        "optional",
    }
)
# Plain numbers shorter than this are ports, counts and timeouts, not identifying values.
MIN_DIGITS = 8
_ASSIGN = re.compile(r"""^\s*(?:export\s+)?["']?[\w.-]+["']?\s*[=:]\s*(.+?)\s*,?\s*$""")
_COMMENT = re.compile(r"^(?:#+|//|;+)\s*")
_SECTION = re.compile(r"^\[[\w .:/@-]*\]$")  # an ini or TOML section header
_URL_PASSWORD = re.compile(r"://[^/:@\s]+:([^@/\s]+)@")


def units_of(text: str) -> Iterator[str]:
    """The sensitive units of a denied file's text: each value of a `KEY=VALUE` line
    (commented-out ones too: an old value is still a value), the password inside a
    credential URL, each key line of a PEM block, and every other non-empty line whole
    (a prose or word-list file)."""
    in_pem = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("-----BEGIN"):
            in_pem = True
            continue
        if stripped.startswith("-----END"):
            in_pem = False
            continue
        if in_pem:
            if len(stripped) >= 16 and ":" not in stripped:
                yield stripped
            continue
        if not stripped or _SECTION.match(stripped):
            continue
        bare = _COMMENT.sub("", stripped, count=1).removeprefix("- ")  # a YAML list item
        m = _ASSIGN.match(bare)
        value = _dotenv_value(m.group(1)) if m else bare
        if is_sensitive(value):
            yield value
        if m and value != bare and " " in value and is_sensitive(bare):
            yield bare  # `Note: ...` in prose is a line, not an assignment
        # The password inside a credential URL also travels on its own.
        if (url := _URL_PASSWORD.search(value)) and is_sensitive(url.group(1)):
            yield url.group(1)


def _dotenv_value(raw: str) -> str:
    """A value as dotenv reads it: inside its quotes, or up to a ` #` comment."""
    raw = raw.strip()
    if raw[:1] in ("'", '"') and (end := raw.find(raw[0], 1)) > 0:
        return raw[1:end]
    return raw.split(" #", 1)[0].strip()


def is_sensitive(value: str) -> bool:
    """Whether a value could identify its file: 6 or more characters, not a stop word, not
    a short number, not punctuation alone. Word-like values count (an all-lower-case
    passphrase is a password too)."""
    if len(value) < MIN_UNIT or value.lower() in STOP_WORDS:
        return False
    if value.isdigit() and len(value) < MIN_DIGITS:
        return False
    return any(c.isalnum() for c in value) and len(set(value)) > 2


def is_word(form: str) -> bool:
    """A short all-letters-and-digits unit: found only as a whole word, so a passphrase
    `sunflower` in `.env` does not withhold `sunflowers` from unrelated text."""
    return len(form) < 16 and form.isalnum()
