"""A denied value that is base64 of bytes (a private key file's lines, a `.env` signing key)
decoded by a shell command and printed as those bytes in another form (hex with any
layout, byte codes, base32, a hex dump) is withheld: the real commands' output goes
through a real gate and the provider receives no run of the key's bytes. Ordinary binary
dumps of the same shapes pass."""

from __future__ import annotations

import ast
import base64
import contextlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import anthropic
import pytest
from command_forms import run, send_outputs

from fake_provider import FakeProvider
from messages import conversation, tool_turn

# Copies under names no rule covers: what is found is the denied index's, not the call's.
_BODY = "sed '1d;$d' backup.txt"  # the key file's base64 lines
_SIGNING = "cut -d= -f2- vars.txt"  # a value that is base64 of 32 random bytes
_PEM = "sed '1d;$d' server.txt"  # a PEM key's 64-character lines
_PY = 'python3 -c "import base64,sys;b=base64.b64decode(sys.stdin.read());print({})"'
_LATIN1 = "b.decode('latin-1')"  # a character per byte
_LATIN1_REPR = f"repr({_LATIN1})"  # and its repr: printable as is, the rest as \\x..
FORMS = [
    (f"{_BODY} | base64 -d | xxd -p", ("xxd",)),
    (f"{_BODY} | base64 -d | xxd", ("xxd",)),
    (f"{_BODY} | base64 -d | od -An -tx1", ("od",)),
    (f"{_BODY} | base64 -d | od -An -tu1", ("od",)),
    (f"{_BODY} | base64 -d | hexdump -C", ("hexdump",)),
    (f"{_BODY} | base64 -d | base32", ("base32",)),
    (f"{_BODY} | base64 -d | xxd -p | tr a-f A-F", ("xxd",)),
    (f"{_BODY} | {_PY.format('b.hex()')}", ("python3",)),
    (f"{_BODY} | {_PY.format('list(b)')}", ("python3",)),
    (f"{_SIGNING} | base64 -d | xxd -p", ("xxd",)),
    (f"{_SIGNING} | base64 -d | od -An -tx1", ("od",)),
    (f"{_SIGNING} | {_PY.format('b.hex(chr(58))')}", ("python3",)),
    (f"{_SIGNING} | base64 -d | base32", ("base32",)),
    (f"{_PEM} | base64 -d | xxd -p", ("xxd",)),
    (f"{_PEM} | base64 -d | od -An -tu1 -w7", ("od",)),
    (f"{_PEM} | base64 -d | xxd -s 300 -l 200", ("xxd",)),  # a part only
    (f"{_BODY} | {_PY.format('b')}", ("python3",)),  # the bytes' repr: b'...\\x82...'
    (
        f"{_PEM} | {_PY.format(_LATIN1_REPR)}",
        ("python3",),
    ),
    (
        f"{_SIGNING} | {_PY.format(_LATIN1)}",
        ("python3",),
    ),
]


@pytest.fixture
def secrets(gate_dirs: dict[str, Path]) -> dict[str, bytes]:
    """An SSH key (denied by the default `Read(**/id_ed25519*)`), a PEM key (`**/*.key`)
    and a `.env` whose value is base64 of random bytes, by the command prefix that prints
    each one's base64; made now, never real."""
    if shutil.which("ssh-keygen") is None or shutil.which("openssl") is None:
        pytest.skip("ssh-keygen or openssl is not installed")
    project = gate_dirs["project"]
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(project / "id_ed25519")],
        check=True,
    )
    signing = os.urandom(32)
    (project / ".env").write_text(f"SIGNING_KEY={base64.b64encode(signing).decode()}\n")
    shutil.copy(project / "id_ed25519", project / "backup.txt")
    shutil.copy(project / ".env", project / "vars.txt")
    rsa = ("-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024")
    subprocess.run(["openssl", "genpkey", *rsa, "-out", str(project / "server.key")], check=True)
    shutil.copy(project / "server.key", project / "server.txt")

    def body(name: str) -> bytes:
        return base64.b64decode("".join((project / name).read_text().splitlines()[1:-1]))

    return {_BODY: body("id_ed25519"), _SIGNING: signing, _PEM: body("server.key")}


def _holds(text: str, data: bytes) -> bool:
    """Whether 10 of `data`'s bytes in a row are left in `text`, as hex in any case and
    layout, as decimal byte codes, as base32, or as characters (Latin-1, or a Python
    literal's escapes)."""
    hexes = re.sub("[^0-9a-f]", "", text.lower())
    chars = text.encode("latin-1", "replace").hex()  # a character per byte (Latin-1)
    for literal in re.findall(r"b?'(?:[^'\\\n]|\\.)*'|b?\"(?:[^\"\\\n]|\\.)*\"", text):
        with contextlib.suppress(ValueError, SyntaxError, UnicodeEncodeError):
            value = ast.literal_eval(literal)
            chars += (value if isinstance(value, bytes) else value.encode("latin-1")).hex()
    codes = " ".join(re.findall(r"\d+", text))
    b32 = re.sub("[^A-Z2-7]", "", text.upper())
    for i in range(0, len(data) - 10, 3):
        piece = data[i : i + 10]
        if piece.hex() in hexes or piece.hex() in chars or " ".join(map(str, piece)) in codes:
            return True
    for k in range(5):  # base32 of the key's bytes at any alignment
        enc = base64.b32encode(b"\0" * k + data).decode()
        mid = enc[len(enc) // 2 - 8 : len(enc) // 2 + 8]
        if mid in b32:
            return True
    return False


def test_a_denied_base64_value_decoded_and_printed_as_bytes_is_withheld(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secrets: dict[str, bytes],
) -> None:
    forms, sent, _ = send_outputs(client, provider, gate_dirs["project"], FORMS, 10)
    leaked = []
    for i, (command, output) in enumerate(forms):
        result = sent["messages"][2 + 2 * i]["content"][0]["content"]
        data = next(v for k, v in secrets.items() if command.startswith(k))
        assert _holds(output, data), command  # the command did print the bytes
        if "[gate: withheld" not in result or _holds(result, data):
            leaked.append(command)
    assert leaked == [], "\n".join(leaked)


def test_binary_dumps_that_hold_no_denied_bytes_pass(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secrets: dict[str, bytes],
) -> None:
    other = os.urandom(64)
    outputs = [
        other.hex(),
        " ".join(str(b) for b in other),
        base64.b32encode(other).decode(),
        subprocess.run(["od", "-An", "-tx1"], input=other, capture_output=True).stdout.decode(),
    ]
    turns = [
        tool_turn(f"toolu_{i}", "Bash", {"command": "od data"}, out)
        for i, out in enumerate(outputs)
    ]
    client.messages.create(**conversation(str(gate_dirs["project"]), *turns))
    sent = provider.seen[-1].json()
    for i, out in enumerate(outputs):
        assert sent["messages"][2 + 2 * i]["content"][0]["content"] == out


_PPRINT = 'python3 -c "import base64,sys,pprint;pprint.pprint({})"'
_STDIN = "base64.b64decode(sys.stdin.read())"
# Forms that passed before: each notation for the whole class (any alignment, word size,
# byte order gate reads, width), on the key body (OpenSSH), a PEM key's and a .env
# signing key's bytes.
MORE_FORMS = [
    # base85 and ascii85, printed or as their repr
    (f"{_BODY} | {_PY.format('base64.b85encode(b).decode()')}", ("python3",)),
    (f"{_PEM} | {_PY.format('base64.a85encode(b)')}", ("python3",)),
    (f"{_PEM} | {_PY.format('base64.b85encode(b[5:])')}", ("python3",)),
    (f"{_SIGNING} | base64 -d | basenc --z85", ("basenc",)),
    # od's words in the machine's order, octal, decimal; from any offset
    (f"{_BODY} | base64 -d | od -An -x", ("od",)),
    (f"{_PEM} | base64 -d | od -An -tx4", ("od",)),
    (f"{_PEM} | base64 -d | od -An -tx8", ("od",)),
    (f"{_BODY} | base64 -d | od -tx8", ("od",)),
    (f"{_PEM} | base64 -d | tail -c +302 | od -An -x", ("od",)),
    (f"{_PEM} | base64 -d | od -An -o", ("od",)),
    (f"{_BODY} | base64 -d | od -An -b", ("od",)),
    (f"{_PEM} | base64 -d | od -An -tu2", ("od",)),
    (f"{_PEM} | base64 -d | od -td4", ("od",)),
    (f"{_SIGNING} | base64 -d | od -An -td8", ("od",)),
    (f"{_PEM} | base64 -d | hexdump -d", ("hexdump",)),
    (f"{_PEM} | base64 -d | xxd -e -s 301 -l 288", ("xxd",)),  # (a last group cut: a limit)
    # bits
    (f"{_BODY} | base64 -d | xxd -b", ("xxd",)),
    (f"{_PEM} | base64 -d | xxd -b -s 301", ("xxd",)),
    (f"{_PEM} | base64 -d | basenc --base2lsbf", ("basenc",)),
    (f"{_SIGNING} | base64 -d | basenc --base2msbf -w 50", ("basenc",)),
    # one big integer
    (f"{_PEM} | {_PY.format(chr(39).join(('int.from_bytes(b,', 'big', ')')))}", ("python3",)),
    (f"{_BODY} | {_PY.format(chr(39).join(('int.from_bytes(b,', 'little', ')')))}", ("python3",)),
    (
        f"{_PEM} | {_PY.format(chr(39).join(('hex(int.from_bytes(b,', 'little', '))')))}",
        ("python3",),
    ),
    # a bytes literal split by pprint, or folded
    (f"{_BODY} | {_PPRINT.format(_STDIN)}", ("python3",)),
    (f"{_PEM} | {_PPRINT.format('{1: ' + _STDIN + '}')}", ("python3",)),
    (f"{_PEM} | {_PY.format('b')} | fold -w 80", ("python3", "fold")),
    # base64 again: wrapped at any width, from an offset not a multiple of 3
    (f"{_PEM} | base64 -d | base64 -w 33", ("base64",)),
    (f"{_BODY} | base64 -d | base64 | fold -w 37", ("base64", "fold")),
    (f"{_PEM} | base64 -d | tail -c +5 | base64", ("base64",)),
    (f"{_PEM} | base64 -d | tail -c +6 | base64 -w 0", ("base64",)),
    (f"{_BODY} | base64 -d | tail -c +3 | base64 -w 41", ("base64",)),
]


def _left(output: str, result: str) -> list[str]:
    """Stretches of a command's output still in what the provider received: 16 characters
    at every 8th of each line, away from the output's two ends (a form is found by all of
    its groups of bytes; the first and the last may depend on a neighbouring byte), with
    12 letters or digits at least."""
    out = []
    for at in range(24, len(output) - 40, 8):
        piece = output[at : at + 16]
        if "\n" not in piece and sum(c.isalnum() for c in piece) >= 12 and piece in result:
            out.append(piece)
    return out


def test_a_denied_key_s_bytes_in_any_notation_are_withheld(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secrets: dict[str, bytes],
) -> None:
    forms, sent, _ = send_outputs(client, provider, gate_dirs["project"], MORE_FORMS, 20)
    leaked = []
    for i, (command, output) in enumerate(forms):
        result = sent["messages"][2 + 2 * i]["content"][0]["content"]
        if "[gate: withheld" not in result or _left(output, result):
            leaked.append(command)
    assert leaked == [], "\n".join(leaked)


def test_a_part_of_a_key_line_as_written_is_withheld(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secrets: dict[str, bytes],
) -> None:
    """Any 18 letters and digits in a row of a key's line but the first (whose start is
    the same in every key of its kind), as written: `cut`, `head -c`, a slice. (From 13
    on most are: a piece of 13 that could be a word is not looked for.)"""
    project = gate_dirs["project"]
    lines = (project / "server.key").read_text().splitlines()[2:-1]
    parts = [_shortest(line[at:]) for line in lines[:-1] for at in (0, 20, 40)]
    turns = [
        tool_turn(f"toolu_{i:02}", "Bash", {"command": "cut -c 1-13 x"}, f"{p}\n")
        for i, p in enumerate(parts)
    ]
    client.messages.create(**conversation(str(project), *turns))
    sent = provider.seen[-1].json()
    for i, part in enumerate(parts):
        assert part not in sent["messages"][2 + 2 * i]["content"][0]["content"]


def _shortest(text: str, letters: int = 18) -> str:
    """The start of `text` that holds `letters` letters and digits."""
    seen = 0
    for i, c in enumerate(text):
        seen += c.isalnum()
        if seen == letters:
            return text[: i + 1]
    return text


def test_other_bytes_in_the_same_notations_pass(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    secrets: dict[str, bytes],
) -> None:
    """The same commands on bytes of no denied file, and ordinary traffic of the same
    shapes (hashes, numbers, another key), reach the provider as they were."""
    project = gate_dirs["project"]
    (project / "other.bin").write_bytes(os.urandom(600))
    # A key of another kind: one of the same kind begins with the same bytes (an OpenSSH
    # key's first line is the same in every unencrypted key of its type).
    ec = ("-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256")
    subprocess.run(["openssl", "genpkey", *ec, "-out", str(project / "other_key")], check=True)
    commands = [
        "od -An -x other.bin",
        "od -td4 other.bin",
        "xxd -b other.bin",
        "xxd -e other.bin",
        "basenc --base2lsbf other.bin",
        "python3 -c \"import sys;print(int.from_bytes(open('other.bin','rb').read(),'big'))\"",
        "python3 -c \"import base64;print(base64.a85encode(open('other.bin','rb').read()))\"",
        "python3 -c \"import pprint;pprint.pprint(open('other.bin','rb').read())\"",
        "base64 -w 33 other.bin",
        "sed '1d;$d' other_key | base64 -d | od -An -x",
    ]
    ran = [(c, run(c, project)) for c in commands if shutil.which(c.split()[0])]
    outputs = [o for _, o in ran] + [
        "\n".join(os.urandom(20).hex() for _ in range(40)),  # commit hashes
        " ".join(str(int.from_bytes(os.urandom(24), "big")) for _ in range(5)),
        "2024 2025 2026 1999\n1234 5678 9012 3456\n",
    ]
    turns = [
        tool_turn(f"toolu_{i:02}", "Bash", {"command": "cat data"}, out)
        for i, out in enumerate(outputs)
    ]
    client.messages.create(**conversation(str(project), *turns))
    sent = provider.seen[-1].json()
    for i, out in enumerate(outputs):
        assert sent["messages"][2 + 2 * i]["content"][0]["content"] == out
