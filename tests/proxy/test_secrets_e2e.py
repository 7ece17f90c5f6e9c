"""Likely secrets in what the agent sends are replaced by keyed, kind-tagged placeholders."""

from __future__ import annotations

import random
import re
import string
from collections.abc import Callable
from pathlib import Path

import anthropic
import pytest

from fake_provider import FakeProvider
from gate.audit.store import AuditStore
from messages import conversation, tool_turn
from screen.secrets_corpus import Gen


def _token() -> str:
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


def test_a_token_in_tool_output_is_redacted_the_same_way_every_turn(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    token, other = _token(), _token()
    project = str(gate_dirs["project"])
    body = conversation(
        project,
        tool_turn(
            "toolu_1",
            "Bash",
            {"command": "git remote -v"},
            f"origin https://x-access-token:{token}@github.com/acme/api.git (fetch)\n"
            f"GITHUB_TOKEN={other}\n",
        ),
    )
    client.messages.create(**body)
    first = provider.seen[-1].body.decode()
    assert token not in first and other not in first
    tags = re.findall(r"\[gate: redacted [a-z.-]+ #[0-9a-f]{8}[^\]]*\]", first)
    assert len(tags) == 2 and tags[0] != tags[1]  # different secrets, different placeholders
    client.messages.create(**body)
    assert provider.seen[-1].body.decode() == first  # deterministic: caches keep working
    row = next(AuditStore(gate_dirs["data"] / "audit.db").rows(1))
    secrets = [w for w in row["withheld"] if w["kind"] == "secret"]
    assert len(secrets) == 2 and all(len(w["fingerprint"]) == 16 for w in secrets)
    assert token not in str(row) and other not in str(row)
    key = gate_dirs["data"] / "secret.key"
    assert key.stat().st_mode & 0o777 == 0o600


def test_a_secret_inside_a_thinking_block_blocks(
    client: anthropic.Anthropic, provider: FakeProvider
) -> None:
    body = conversation("/p")
    body["messages"] += [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": f"use GITHUB_TOKEN={_token()}",
                    "signature": "c2ln",
                },
                {"type": "text", "text": "ok"},
            ],
        },
        {"role": "user", "content": "go"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="likely secret"):
        client.messages.create(**body)
    assert provider.seen == []


def test_high_tier_findings_say_that_the_user_did_not_approve(
    client: anthropic.Anthropic, provider: FakeProvider
) -> None:
    client.messages.create(
        **conversation(
            "/p", tool_turn("toolu_1", "Bash", {"command": "env"}, f"GITHUB_TOKEN={_token()}\n")
        )
    )
    assert "; not approved by the user]" in provider.seen[-1].body.decode()


@pytest.mark.parametrize(
    ("setting", "outcome"),
    [
        ("github.token: block", "blocked"),
        ("github.token: allow", "redacted"),
        ("github-token: allow", "redacted"),
        ("high: redact", "redacted"),
        ("high: allow\n  github.token: redact", "redacted"),
    ],
)
def test_the_secrets_policy_comes_from_rule_files(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    setting: str,
    outcome: str,
) -> None:
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text(f"secrets:\n  {setting}\n")
    token = _token()
    body = conversation(
        str(project), tool_turn("toolu_1", "Bash", {"command": "env"}, f"GITHUB_TOKEN={token}\n")
    )
    if outcome == "blocked":
        with pytest.raises(anthropic.BadRequestError, match="secrets policy blocks"):
            client.messages.create(**body)
        assert provider.seen == []
        return
    client.messages.create(**body)
    sent = provider.seen[-1].body.decode()
    # The shipped pack says high: ask; a project may tighten it (block) but never loosen it
    # (high: redact and github.token: allow stay ask, unapproved here: redacted).
    assert (token in sent) is (outcome == "sent")


def test_a_project_local_file_cannot_undo_the_users_block(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    gate_dirs["config"].mkdir(exist_ok=True)
    (gate_dirs["config"] / "rules.yaml").write_text("secrets:\n  high: block\n  low: block\n")
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.local.yaml").write_text("secrets:\n  github-token: allow\n")
    body = conversation(
        str(project), tool_turn("toolu_1", "Bash", {"command": "env"}, f"GITHUB_TOKEN={_token()}\n")
    )
    with pytest.raises(anthropic.BadRequestError, match="secrets policy blocks"):
        client.messages.create(**body)
    assert provider.seen == []


# Spelled in characters a model reads as the token: fullwidth, mathematical bold, a
# combining accent or a variation selector between letters, tag characters.
LOOKALIKES = {
    "fullwidth": lambda t: "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in t),
    "math-bold": lambda t: "".join(
        chr(0x1D400 + ord(c) - 65)
        if c.isupper()
        else chr(0x1D41A + ord(c) - 97)
        if c.islower()
        else chr(0x1D7CE + ord(c) - 48)
        if c.isdigit()
        else c
        for c in t
    ),
    "combining": lambda t: "\u0301".join(t),
    "variation": lambda t: "\ufe0f".join(t),
    "tags": lambda t: "".join(chr(0xE0000 + ord(c)) for c in t),
}


def test_a_token_in_lookalike_characters_is_redacted(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    tokens = {name: _token() for name in LOOKALIKES}
    turns = [
        tool_turn(
            f"toolu_{i}", "Bash", {"command": "cat notes"}, f"remote is at {spell(tokens[n])} now\n"
        )
        for i, (n, spell) in enumerate(LOOKALIKES.items())
    ]
    client.messages.create(**conversation(str(gate_dirs["project"]), *turns))
    sent = provider.seen[-1].json()
    leaked = []
    for i, name in enumerate(LOOKALIKES):
        result = sent["messages"][2 + 2 * i]["content"][0]["content"]
        if "[gate: redacted" not in result or LOOKALIKES[name](tokens[name])[8:] in result:
            leaked.append(name)
    assert leaked == [], leaked


# A token's two halves on two lines after other text, as commands print them.
FOLDS: dict[str, Callable[[str], str]] = {
    "wrapped": lambda t: f"export GITHUB_TOKEN={t[:11]}\n{t[11:]}\n",
    "printf": lambda t: f"token={t[:20]}\\n{t[20:]}",  # `\n` written out
    "crlf": lambda t: f"GITHUB_TOKEN: {t[:4]}\r\n{t[4:]}\r\n",
    "fold -w 30": lambda t: _fold(f"remote set-url origin {t} && git push", 30),
}


def _fold(line: str, width: int) -> str:
    return "\n".join(line[i : i + width] for i in range(0, len(line), width))


def _leaked(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    project: Path,
    forms: dict[str, Callable[[str], str]],
    make: Callable[[], str] = _token,
) -> list[str]:
    """Each form of a fresh token (`make`) as one tool result of one request through the
    listener: the forms whose result reached the provider unredacted or with a part of
    the token (its first 10 characters after the prefix, or its last 10)."""
    tokens = {name: make() for name in forms}
    turns = [
        tool_turn(f"toolu_{i}", "Bash", {"command": "cat log"}, forms[name](tokens[name]))
        for i, name in enumerate(forms)
    ]
    client.messages.create(**conversation(str(project), *turns))
    sent = provider.seen[-1].json()
    leaked = []
    for i, name in enumerate(forms):
        result = sent["messages"][2 + 2 * i]["content"][0]["content"]
        token = tokens[name]
        if "[gate: redacted" not in result or any(p in result for p in (token[4:14], token[-10:])):
            leaked.append(name)
    return leaked


def test_a_token_folded_after_other_text_is_redacted(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """Through a real listener: the provider gets neither half of the token."""
    assert _leaked(client, provider, gate_dirs["project"], FOLDS) == []


# A token with more glued after it, as a shell prints `${TOKEN}x`.
GLUED: dict[str, Callable[[str], str]] = {
    "letter": lambda t: f"{t}x\n",
    "underscore": lambda t: f"backup: {t}_old\n",
    "digits": lambda t: f'echo "{t}2024"\n',
    "both sides": lambda t: f"x{t}Zq9\n",
}


def test_a_token_with_text_glued_after_it_is_redacted(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """Through a real listener: one character after a token hid it from every detector."""
    assert _leaked(client, provider, gate_dirs["project"], GLUED) == []


def _google_key() -> str:
    rng = random.SystemRandom()
    return "AIza" + "".join(
        rng.choice(string.ascii_letters + string.digits + "_-") for _ in range(35)
    )


def test_a_token_of_a_guarded_format_glued_to_text_is_redacted(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """`AIza` keeps its guards (words and blobs hold it by chance): glued to a character it
    hid from every detector. Its loosened twin redacts it (low tier: no question)."""
    forms: dict[str, Callable[[str], str]] = {
        **GLUED,
        "before": lambda t: f"key:x{t}\n",
        "file name": lambda t: f"saved to MY_KEY_{t}.bak\n",
    }
    assert _leaked(client, provider, gate_dirs["project"], forms, _google_key) == []


def test_a_token_body_without_its_prefix_is_redacted(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """`${GH_TOKEN#ghp_}` through a real listener: no keyword, the checksum tells it."""
    forms: dict[str, Callable[[str], str]] = {
        "alone": lambda t: f"{t}\n",
        "glued": lambda t: f"tail=x{t}_old\n",
        "backwards": lambda t: f"{t[::-1]}\n",
    }
    assert _leaked(client, provider, gate_dirs["project"], forms, lambda: _token()[4:]) == []
