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
from command_forms import send_outputs

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
