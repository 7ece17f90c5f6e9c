"""A whole denied file turned into another form by a shell command (base32, compressed then
base64 or hex, a digest) is withheld by its values, whatever name the command used: the
real commands' output goes through a real gate and the fake provider receives none of it."""

from __future__ import annotations

import base64
import gzip
import lzma
import zlib
from pathlib import Path

import anthropic
import pytest
from command_forms import send_outputs

from conftest import fake_secret
from fake_provider import FakeProvider
from messages import conversation, tool_turn

# (the pipeline, run on a copy of .env named notes.bak; the tools it needs)
FORMS = [
    ("base32 notes.bak", ("base32",)),
    ("base32 -w 0 notes.bak", ("base32",)),
    ("basenc --base32hex notes.bak", ("basenc",)),
    ("basenc --base32 -w 60 notes.bak", ("basenc",)),
    ("gzip -c notes.bak | base64", ("gzip", "base64")),
    ("gzip -9c notes.bak | base64 -w0", ("gzip", "base64")),
    ("cat notes.bak | gzip | xxd -p", ("gzip", "xxd")),
    ("gzip -c notes.bak | base32", ("gzip", "base32")),
    ("xz -c notes.bak | base64", ("xz", "base64")),
    ("bzip2 -c notes.bak | base64", ("bzip2", "base64")),
    ("zstd -qc notes.bak | base64", ("zstd", "base64")),
    ("tar cz notes.bak | base64", ("tar", "gzip", "base64")),
    ("tar cJ notes.bak | base64", ("tar", "xz", "base64")),
    ("zip -q - notes.bak | base64", ("zip", "base64")),
    ("gzip -c notes.bak | head -c 120 | base64", ("gzip", "base64")),  # a stream cut short
    ("gzip -c notes.bak | gzip | base64", ("gzip", "base64")),
    ("base64 notes.bak | gzip | base64", ("gzip", "base64")),
    (
        'python3 -c "import zlib,base64;'
        "print(base64.b64encode(zlib.compress(open('notes.bak','rb').read())).decode())\"",
        ("python3",),
    ),
    ("sha256sum notes.bak", ("sha256sum",)),
    ("md5sum notes.bak", ("md5sum",)),
    ("sha1sum notes.bak", ("sha1sum",)),
    ("sha512sum notes.bak", ("sha512sum",)),
    ("b2sum notes.bak", ("b2sum",)),
    ("openssl dgst -sha256 -binary notes.bak | base64", ("openssl", "base64")),
    # Bytes printed one by one (gate/screen/dumps.py).
    ("xxd notes.bak", ("xxd",)),
    ("xxd -g1 -c 24 notes.bak", ("xxd",)),
    ("cat notes.bak | xxd -u", ("xxd",)),
    ("hexdump -C notes.bak", ("hexdump",)),
    ("hexdump notes.bak", ("hexdump",)),
    ("od -c notes.bak", ("od",)),
    ("od -An -c notes.bak", ("od",)),
    ("od -An -tx1 notes.bak", ("od",)),
    ("od -x notes.bak", ("od",)),
    ("od -b notes.bak", ("od",)),
    ("od notes.bak", ("od",)),
    ("od -A x -t x1z notes.bak", ("od",)),
    ("fold -w1 notes.bak", ("fold",)),
    ("sed 's/./& /g' notes.bak", ("sed",)),
    ("sed 's/./&\\n/g' notes.bak", ("sed",)),
    ("python3 -c \"print(list(open('notes.bak','rb').read()))\"", ("python3",)),
    ("python3 -c \"print(list(open('notes.bak').read()))\"", ("python3",)),
    ("python3 -c \"import json;print(json.dumps(list(open('notes.bak').read())))\"", ("python3",)),
    ("python3 -c \"print(open('notes.bak','rb').read().hex(' '))\"", ("python3",)),
    ("python3 -c \"print(open('notes.bak','rb').read().hex(':'))\"", ("python3",)),
    ("xxd -i notes.bak", ("xxd",)),  # a C array: `0x53, 0x54, ...`, twelve a line
    ("gzip -c notes.bak | xxd -i", ("gzip", "xxd")),
    ("python3 -c \"print([hex(b) for b in open('notes.bak','rb').read()])\"", ("python3",)),
    ("lzma -c notes.bak | base64", ("lzma", "base64")),  # xz-utils' legacy format
    ("xz --format=lzma -c notes.bak | xxd -p", ("xz", "xxd")),
    # One escape per byte.
    ("od -An -tx1 -v notes.bak | tr -d ' \\n' | sed 's/../%&/g'", ("od", "tr", "sed")),
    ("od -An -tx1 -v notes.bak | tr -d ' \\n' | sed 's/../\\\\x&/g'", ("od", "tr", "sed")),
    ("od -An -tx1 -v notes.bak | tr -d ' \\n' | sed 's/../0x&, /g'", ("od", "tr", "sed")),
    ("od -An -to1 -v notes.bak | tr -d '\\n' | sed 's/ /\\\\/g'", ("od", "tr", "sed")),
    (
        "python3 -c \"print(''.join('&#%d;' % b for b in open('notes.bak','rb').read()))\"",
        ("python3",),
    ),
]


@pytest.fixture
def env(gate_dirs: dict[str, Path]) -> tuple[bytes, list[str]]:
    values = [fake_secret("sk_live_"), fake_secret("p4ss-"), fake_secret("AKIA")]
    text = f"# app\nSTRIPE_KEY={values[0]}\nDB_PASSWORD={values[1]}\nDEBUG=true\nAWS={values[2]}\n"
    (gate_dirs["project"] / ".env").write_text(text)
    (gate_dirs["project"] / "notes.bak").write_text(text)  # a copy under an innocent name
    return text.encode(), values


def _pieces(output: str) -> list[str]:
    """Stretches of a command's output that would show it left: 16 characters from each
    line of it (a digest's line: the digest)."""
    return [line[:16] for line in output.split() if len(line) >= 16]


def test_every_form_is_withheld_under_any_name(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: tuple[bytes, list[str]],
) -> None:
    project = gate_dirs["project"]
    forms, sent, raw = send_outputs(client, provider, project, FORMS, 12)
    for value in env[1]:
        assert value not in raw
    leaked = [
        command
        for i, (command, output) in enumerate(forms)
        if "[gate: withheld a value from .env"
        not in (result := sent["messages"][2 + 2 * i]["content"][0]["content"])
        or any(piece in result for piece in _pieces(output))
    ]
    assert leaked == []


def test_a_command_that_names_the_file_is_withheld_whole(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: tuple[bytes, list[str]],
) -> None:
    project = gate_dirs["project"]
    output = base64.b64encode(gzip.compress(env[0])).decode()
    turn = tool_turn("toolu_1", "Bash", {"command": "gzip -c .env | base64"}, output)
    client.messages.create(**conversation(str(project), turn))
    result = provider.seen[-1].json()["messages"][2]["content"][0]["content"]
    assert result.startswith("[gate: content withheld. Bash command")


def test_ordinary_base64_and_compressed_data_pass_untouched(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: tuple[bytes, list[str]],
) -> None:
    project = gate_dirs["project"]
    other = b"# another file\n" + b"NAME=demo\n" * 200
    c_array = ",\n".join(  # `xxd -i` of it
        "  " + ", ".join(f"0x{b:02x}" for b in other[i : i + 12]) for i in range(0, len(other), 12)
    )
    outputs = [
        base64.b64encode(gzip.compress(other)).decode(),
        zlib.compress(other).hex(),
        base64.b64encode(lzma.compress(other, format=lzma.FORMAT_ALONE)).decode(),
        "unsigned char data[] = {\n" + c_array + "\n};",
        str([hex(b) for b in other]),
        base64.b32encode(other).decode(),
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567ABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
    ]
    turns = [
        tool_turn(f"toolu_{i}", "Bash", {"command": "cat data"}, out)
        for i, out in enumerate(outputs)
    ]
    client.messages.create(**conversation(str(project), *turns))
    sent = provider.seen[-1].json()
    for i, out in enumerate(outputs):
        assert sent["messages"][2 + 2 * i]["content"][0]["content"] == out


def test_a_zip_bomb_is_withheld_unread_and_the_request_goes_on(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    env: tuple[bytes, list[str]],
) -> None:
    # 256 MiB of zeros then the file, 256 KiB compressed: the value sits past what gate
    # inflates, so the whole blob is withheld, not read in part and let through.
    pack = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunks = [pack.compress(b"\0" * (1 << 20)) for _ in range(256)]
    blob = b"".join([*chunks, pack.compress(env[0]), pack.flush()])
    output = "backup:\n" + base64.b64encode(blob).decode() + "\nend\n"
    turn = tool_turn("toolu_1", "Bash", {"command": "cat notes.bak.gz | base64"}, output)
    client.messages.create(**conversation(str(gate_dirs["project"]), turn))
    result = provider.seen[-1].json()["messages"][2]["content"][0]["content"]
    assert result == (
        "backup:\n[gate: withheld compressed data that inflates to more than gate screens"
        " for denied files' values]\nend\n"
    )
