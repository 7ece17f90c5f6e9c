"""A denied file's values turned by a command into a form a reader takes for them but an
exact matcher does not (upper case, fullwidth or Cyrillic look-alike letters, invisible
characters between the letters, UTF-16, shell or HTML quoting) are withheld under any
name: the real commands' output goes through a real gate and the provider receives none
of the values in any of these forms."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Callable
from pathlib import Path

import anthropic
import pytest
from command_forms import send_outputs

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.screen.lookalike import folded
from messages import conversation, tool_turn

_PY = "python3 -c \"import sys;t=open('notes.bak').read();print({})\""
# (the pipeline, run on a copy of .env named notes.bak; the tools it needs)
FORMS = [
    ("tr a-z A-Z < notes.bak", ("tr",)),
    ("awk '{print toupper($0)}' notes.bak", ("awk",)),
    (_PY.format("t.lower()"), ("python3",)),
    # fullwidth letters, as NFKC reads back
    (_PY.format("''.join(chr(ord(c)+0xFEE0) if '!'<=c<='~' else c for c in t)"), ("python3",)),
    # Cyrillic twins of a, c, e, o, p, x
    (
        _PY.format(
            "t.translate(str.maketrans('aceopx','\\u0430\\u0441\\u0435\\u043e\\u0440\\u0445'))"
        ),
        ("python3",),
    ),
    ("sed 's/./&\\xe2\\x80\\x8b/g' notes.bak", ("sed",)),  # a zero-width space after each
    (_PY.format("'\\u0301'.join(t)"), ("python3",)),  # a combining accent between letters
    (_PY.format("''.join(chr(0xE0000+ord(c)) if ' '<=c<='~' else c for c in t)"), ("python3",)),
    ("iconv -f utf-8 -t utf-16 notes.bak | base64", ("iconv", "base64")),
    ("iconv -f utf-8 -t utf-16le notes.bak | base64 -w0", ("iconv", "base64")),
    ("iconv -f utf-8 -t utf-16le notes.bak | xxd -p", ("iconv", "xxd")),
    ("iconv -f utf-8 -t utf-16 notes.bak | xxd", ("iconv", "xxd")),
    ("while IFS= read -r l; do printf '%q\\n' \"$l\"; done < notes.bak", ("bash",)),
    (_PY.format("__import__('html').escape(t)"), ("python3",)),
    (_PY.format("__import__('json').dumps(__import__('json').dumps(t))"), ("python3",)),
]


@pytest.fixture
def env(gate_dirs: dict[str, Path]) -> list[str]:
    values = [
        fake_secret("sk_live_"),
        "Pw" + fake_secret(),
        "p&ss'w" + fake_secret()[:10] + '"$x!',
    ]
    text = f'STRIPE_KEY={values[0]}\nDB_PASSWORD={values[1]}\nADMIN="{values[2]}"\n'
    text = text.replace(f'"{values[2]}"', values[2])  # dotenv would strip quotes
    for name in (".env", "notes.bak"):  # a copy under an innocent name
        (gate_dirs["project"] / name).write_text(text)
    return values


def _readings(value: str) -> list[str]:
    """The forms of a value the test looks for in what the provider received."""
    wide = value.encode("utf-16-le")
    return [
        value.lower(),
        wide.hex(),
        *(base64.b64encode(b"\0" * k + wide).decode()[4:-4].lower() for k in range(3)),
        html.escape(value).lower(),
        json.dumps(json.dumps(value))[3:-3].lower(),
        "".join("\\" + c if c in "&'\"$!" else c for c in value).lower(),  # printf %q
    ]


def test_every_lookalike_form_is_withheld(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: list[str],
) -> None:
    project = gate_dirs["project"]
    forms, sent, _ = send_outputs(client, provider, project, FORMS, 10)
    leaked = []
    for i, (command, _) in enumerate(forms):
        result = sent["messages"][2 + 2 * i]["content"][0]["content"]
        view = (folded(result) or result).lower()
        compact = "".join(view.split())
        if "[gate: withheld a value from .env" not in result or any(
            r in view or r in compact for v in env for r in _readings(v)
        ):
            leaked.append(command)
    assert leaked == [], "\n".join(leaked)


@pytest.mark.parametrize(
    "spell",
    [
        lambda v: [ord(c) for c in v],  # `[ord(c) for c in value]` as JSON numbers
        lambda v: [float(ord(c)) for c in v],
        lambda v: list(f"KEY={v}\n".encode()),  # `list(open(f, "rb").read())`
        lambda v: list(f"KEY={v}\n"),  # `list(open(f).read())`: one-character strings
    ],
    ids=["codes", "floats", "bytes", "characters"],
)
def test_a_value_spelled_as_a_list_of_numbers_is_refused(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: list[str],
    spell: Callable[[str], list[float] | list[str]],
) -> None:
    # The agent's own call carries the value as JSON numbers, which are not strings: no
    # string screen reads them, and they cannot be replaced in place.
    turn = tool_turn("toolu_1", "Write", {"file_path": "x.json", "data": spell(env[1])}, "ok")
    with pytest.raises(anthropic.BadRequestError, match="list of characters or character codes"):
        client.messages.create(**conversation(str(gate_dirs["project"]), turn))
    assert provider.seen == []


def test_ordinary_lists_of_numbers_pass(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: list[str],
) -> None:
    data = {
        "ids": list(range(1000)),
        "vector": [0.25, -1.5, 3.0] * 100,
        "ports": [80, 443],
        "grades": list("ABCDEF"),
        "stop": ["\n", "", "#"],
    }
    turn = tool_turn("toolu_1", "Write", {"file_path": "x.json", "data": data}, "ok")
    client.messages.create(**conversation(str(gate_dirs["project"]), turn))
    assert provider.seen[-1].json()["messages"][1]["content"][0]["input"]["data"] == data
