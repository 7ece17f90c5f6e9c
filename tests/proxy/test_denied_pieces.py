"""A random-looking denied value taken apart by a shell command (cut in pieces sent in two
results, a character between each of its own, folded, re-cased, as byte codes with
separators, as base64 wrapped narrow, reversed, or of re-cased text) is withheld under any
name: the real commands' output goes through a real gate and the provider receives none of
the value's letters and digits in order. Ordinary output of the same shapes passes."""

from __future__ import annotations

import base64
import random
import re
import string
from pathlib import Path

import anthropic
import pytest
from command_forms import send_outputs

from fake_provider import FakeProvider
from messages import conversation, tool_turn

_PY = "python3 -c \"v=[l.split('=',1)[1] for l in open('notes.bak').read().split()];print({})\""
# (the pipeline, run on a copy of .env named notes.bak; the tools it needs)
FORMS = [
    ("cut -d= -f2 notes.bak | cut -c1-14", ("cut",)),  # a value cut in two, sent apart
    ("cut -d= -f2 notes.bak | cut -c15-", ("cut",)),
    ("fold -w 8 notes.bak", ("fold",)),
    ("sed 's/./&#/g' notes.bak", ("sed",)),
    ("cut -d= -f2 notes.bak | sed 's/./& /g'", ("cut", "sed")),  # no `_`, `-` or `=`
    ("cut -d= -f2 notes.bak | grep -o .", ("cut", "grep")),
    ("tr a-zA-Z A-Za-z < notes.bak", ("tr",)),
    (_PY.format("*[x.capitalize() for x in v]"), ("python3",)),
    (
        _PY.format("*[' + '.join(repr(x[i:i+5]) for i in range(0, len(x), 5)) for x in v]"),
        ("python3",),
    ),
    ("cut -d= -f2 notes.bak | od -An -tx1", ("cut", "od")),
    ("cut -d= -f2 notes.bak | od -An -tu1", ("cut", "od")),
    ("cut -d= -f2 notes.bak | xxd -p -c 4", ("cut", "xxd")),
    ("cut -d= -f2 notes.bak | xxd -s 3", ("cut", "xxd")),
    (_PY.format("*[x.encode().hex('-') for x in v]"), ("python3",)),
    ("base64 -w 12 notes.bak", ("base64",)),
    ("base64 notes.bak | rev", ("base64", "rev")),
    ("base64 -w0 notes.bak | rev", ("base64", "rev")),
    ("rev notes.bak | base64", ("rev", "base64")),
    ("tr a-z A-Z < notes.bak | base64 -w0", ("tr", "base64")),
    ("xxd -p notes.bak | rev", ("xxd", "rev")),
]


def _token(n: int) -> str:
    """Letters in both cases with a digit every fifth character, made at run time (never
    a real secret): any 12 of its characters in a row look random."""
    rng = random.SystemRandom()
    return "".join(
        rng.choice(string.digits if i % 5 == 4 else string.ascii_letters) for i in range(n)
    )


@pytest.fixture
def env(gate_dirs: dict[str, Path]) -> list[str]:
    # Names no secret detector reads as a credential: what is found is the denied index's.
    values = [_token(28), _token(30), _token(32)]
    names = ("ALPHA", "BRAVO", "DELTA")
    text = "".join(f"{name}={v}\n" for name, v in zip(names, values, strict=True))
    for name in (".env", "notes.bak"):  # a copy under an innocent name
        (gate_dirs["project"] / name).write_text(text)
    return values


def _shows(result: str, value: str) -> bool:
    """Whether 10 of the value's letters and digits in a row, in any case, are left."""
    kept = re.sub("[^0-9a-z]", "", result.replace("[gate: withheld", " ").lower())
    word = value.lower()
    return any(word[i : i + 10] in kept for i in range(len(word) - 9))


def test_a_value_taken_apart_is_withheld_under_any_name(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: list[str],
) -> None:
    forms, sent, _ = send_outputs(client, provider, gate_dirs["project"], FORMS, 15)
    leaked = []
    for i, (command, output) in enumerate(forms):
        result = sent["messages"][2 + 2 * i]["content"][0]["content"]
        encoded = any(w in command for w in ("base64", "xxd -p", "od -An -tx1", "hex("))
        # An encoded form hides the letters: then nothing of the output may be left.
        if "[gate: withheld a value from .env" not in result or (
            any(_shows(result, v) for v in env)
            or (encoded and any(line[:16] in result for line in output.split() if len(line) > 24))
        ):
            leaked.append(command)
    assert leaked == [], "\n".join(leaked)


def test_a_value_built_from_pieces_in_the_agents_own_code_is_withheld(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: list[str],
) -> None:
    value = env[0]
    code = f'KEY = "{value[:9]}" + "{value[9:18]}" + "{value[18:]}"\n'
    turn = tool_turn("toolu_1", "Write", {"file_path": "k.py", "content": code}, "ok")
    client.messages.create(**conversation(str(gate_dirs["project"]), turn))
    sent = provider.seen[-1].json()["messages"][1]["content"][0]["input"]["content"]
    assert "[gate: withheld a value from .env" in sent
    assert not _shows(sent, value)


def test_ordinary_output_of_the_same_shapes_passes_untouched(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: list[str],
) -> None:
    other = "".join(f"NAME_{i}=demo-{i}\nPORT_{i}=80{i:02}\n" for i in range(30)).encode()
    outputs = [
        "\n".join(f"src/module_{i}.py" for i in range(200)),  # a listing, one per line
        other.hex(" "),
        " ".join(str(b) for b in other),
        base64.encodebytes(other).decode(),  # base64 of text, read as text
        base64.b64encode(other).decode()[::-1],
        base64.b64encode(other.upper()).decode(),
        "\n".join(other.decode()[i : i + 8] for i in range(0, len(other), 8)),  # fold -w8
        " ".join(other.decode().swapcase()),
        "f47ac10b-58cc-4372-a567-0e02b2c3d479 4b825dc642cb6eb9a060e54bf8d69288fbee4904",
    ]
    turns = [
        tool_turn(f"toolu_{i}", "Bash", {"command": "cat data"}, out)
        for i, out in enumerate(outputs)
    ]
    client.messages.create(**conversation(str(gate_dirs["project"]), *turns))
    sent = provider.seen[-1].json()
    for i, out in enumerate(outputs):
        assert sent["messages"][2 + 2 * i]["content"][0]["content"] == out
