"""Values written right after a character escape (`quote(open(".env").read())`, a URL nested in
a query parameter, quoted-printable, .NET's `\\u0022`), sent as a tool result through a real
gate: an escape ending in a letter or digit (`%3D`, `=3D`, `\\u003d`) took the word boundary
before the value, so a short denied value and every vendor token were not found there."""

from __future__ import annotations

import json
import os
import quopri
import random
import string
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, quote_plus

import anthropic
import pytest

from fake_provider import FakeProvider
from messages import conversation, tool_turn
from screen.secrets_corpus import Gen


def _short() -> str:
    """A password of 10 letters and digits: found only as a whole word."""
    return "Pw" + os.urandom(4).hex()


def _ghp() -> str:
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


def _aws_secret() -> str:
    rng = random.SystemRandom()
    body = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(38))
    return body[:12] + "/" + body[12:25] + "+" + body[25:]  # `/` and `+` get escaped


ESCAPINGS: dict[str, Callable[[str], str]] = {
    "quote": lambda text: quote(text),  # `jq -sRr @uri .env`, `quote(open(f).read())`
    "quote_plus": quote_plus,
    "nested url": lambda text: "https://app.example/cb?next=" + quote("/x?" + text, safe=""),
    "quoted-printable": lambda text: quopri.encodestring(text.encode()).decode(),
    # .NET's System.Text.Json writes `"`, `'`, `+`, `<`, `>`, `&` (and `=` here) as \uXXXX.
    "json \\u escapes": lambda text: (
        json.dumps(text).replace("=", "\\u003D").replace('"', "\\u0022")
    ),
    "\\x escapes": lambda text: text.replace("=", "\\x3d").replace("\n", "\\x0a"),
}


@pytest.mark.parametrize("escaping", sorted(ESCAPINGS))
def test_a_denied_value_after_an_escape_never_leaves(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    escaping: str,
) -> None:
    project = gate_dirs["project"]
    short = _short()
    env = f"DB_PASS={short}\nDEBUG=true\n"
    (project / ".env").write_text(env)
    out = ESCAPINGS[escaping](env)
    assert short in out  # the value is written as it is, only what is around it is escaped
    turn = tool_turn("toolu_1", "Bash", {"command": "python3 dump.py notes.bak"}, out)
    client.messages.create(**conversation(str(project), turn))
    sent = provider.seen[-1].body.decode()
    assert short not in sent
    assert "[gate: withheld a value from .env" in sent


@pytest.mark.parametrize("escaping", sorted(ESCAPINGS))
def test_a_token_after_an_escape_never_leaves(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    escaping: str,
) -> None:
    """A file no rule denies: the detectors read the escapes decoded."""
    token, secret = _ghp(), _aws_secret()
    text = f"GITHUB_TOKEN={token}\naws_secret_access_key={secret}\n"
    out = ESCAPINGS[escaping](text)
    turn = tool_turn("toolu_1", "Bash", {"command": "python3 dump.py config.txt"}, out)
    client.messages.create(**conversation(str(gate_dirs["project"]), turn))
    sent = provider.seen[-1].body.decode()
    assert token not in sent
    assert secret.split("/")[0] not in sent and secret.split("+")[-1] not in sent
    assert "[gate: redacted github-token" in sent


def test_escaped_urls_and_json_pass_untouched(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """Ordinary escaped text holds nothing: links, a quoted path, PHP's JSON, a mail."""
    (gate_dirs["project"] / ".env").write_text("DB_PASS=Pw3c9aXk2q\n")
    out = "\n".join(
        [
            '<a href="https://example.com/search?q=how%20to%20rotate%20keys&page=2">next</a>',
            "GET /api/v1/files/" + quote("reports/2024 Q3 summary.pdf", safe="") + " 200",
            json.dumps({"url": "https://cdn.example.com/a/b.js", "id": 7}).replace("/", "\\/"),
            quopri.encodestring(b"Subject: build=3 passed\nSee the log =E2=9C=93").decode(),
            "{\\u0022name\\u0022: \\u0022gate\\u0022, \\u0022version\\u0022: \\u00221.2.0\\u0022}",
        ]
    )
    turn = tool_turn("toolu_1", "Bash", {"command": "curl -s https://example.com/"}, out)
    client.messages.create(**conversation(str(gate_dirs["project"]), turn))
    result = provider.seen[-1].json()["messages"][-1]["content"][0]["content"]
    assert result == out


# Escapes that write every character of the value (not only what is around it): HTML
# character references, octal bytes, JavaScript's escape().
WHOLE: dict[str, Callable[[str], str]] = {
    "html hex": lambda text: "".join(f"&#x{ord(c):x};" for c in text),
    "html decimal": lambda text: "".join(f"&#{ord(c)};" for c in text),
    "octal": lambda text: "".join(f"\\{b:03o}" for b in text.encode()),
    "%u": lambda text: "".join(f"%u{ord(c):04X}" for c in text),
}


@pytest.mark.parametrize("escaping", sorted(WHOLE))
def test_a_value_written_in_escapes_never_leaves(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    escaping: str,
) -> None:
    """In a prompt (`see: &#x50;&#x77;...`) and in a tool's output: the denied value, and a
    token no rule denies, read through the escapes."""
    project = gate_dirs["project"]
    rng = random.SystemRandom()
    value = "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(24))
    (project / ".env").write_text(f"DB_PASSWORD={value}\nDEBUG=true\n")
    token = _ghp()
    encode = WHOLE[escaping]
    prompt = {"role": "user", "content": f"see: {encode(value)} ok"}
    client.messages.create(model="claude-test", max_tokens=8, messages=[prompt])
    sent = json.loads(provider.seen[-1].body)["messages"][0]["content"]
    assert encode(value) not in sent and "[gate: withheld a value from .env" in sent
    out = f"token: {encode(token)}\n"
    turn = tool_turn("toolu_1", "Bash", {"command": "printf '%b' \"$(cat notes)\""}, out)
    client.messages.create(**conversation(str(project), turn))
    content = json.loads(provider.seen[-1].body)["messages"][2]["content"][0]["content"]
    assert encode(token)[: len(encode(token)) // 2] not in content
    assert "[gate: redacted github-token" in content
