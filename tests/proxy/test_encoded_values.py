"""One value (a denied file's, or a vendor token the detectors know) encoded on its own by a
program the agent runs, sent as a tool result through a real gate: the provider receives
neither the value nor its encoded form."""

from __future__ import annotations

import base64
import random
from collections.abc import Callable
from pathlib import Path

import anthropic
import pytest

from conftest import fake_secret
from fake_provider import FakeProvider
from messages import conversation, tool_turn
from screen.secrets_corpus import Gen

_B32HEX = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", b"0123456789ABCDEFGHIJKLMNOPQRSTUV")

ENCODINGS: dict[str, Callable[[str], str]] = {
    # base32 of a value alone ends in padding: `echo -n $V | base32`, `base64.b32encode`.
    "base32": lambda v: base64.b32encode(v.encode()).decode(),
    "base32hex": lambda v: base64.b32encode(v.encode()).translate(_B32HEX).decode(),
    # Bits, eight a byte: `' '.join(format(b, '08b') ...)`, one byte a line, `basenc
    # --base2msbf` (not separated, wrapped at 76 columns).
    "bits spaced": lambda v: " ".join(format(b, "08b") for b in v.encode()),
    "bits lines": lambda v: "\n".join(format(b, "08b") for b in v.encode()),
    "bits wrapped": lambda v: "\n".join(_wrap("".join(format(b, "08b") for b in v.encode()))),
}


def _wrap(text: str, width: int = 76) -> list[str]:
    return [text[i : i + width] for i in range(0, len(text), width)]


def _ghp() -> str:
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


@pytest.mark.parametrize("source", ["denied", "token"])
@pytest.mark.parametrize("encoding", sorted(ENCODINGS))
def test_an_encoded_value_never_leaves(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    source: str,
    encoding: str,
) -> None:
    project = gate_dirs["project"]
    value = fake_secret("sk_live_") if source == "denied" else _ghp()
    (project / ".env").write_text(f"STRIPE_KEY={value if source == 'denied' else 'x'}\n")
    form = ENCODINGS[encoding](value)
    turn = tool_turn("toolu_1", "Bash", {"command": "python3 enc.py"}, f"encoded:\n{form}\n")
    client.messages.create(**conversation(str(project), turn))
    sent = provider.seen[-1].body.decode()
    assert value not in sent and form.rstrip("=")[:64] not in sent
    assert "[gate: " in sent


def test_a_file_in_base64_with_each_line_reversed_never_leaves(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """`base64 .env | rev`: the last line's padding comes first once it is reversed."""
    project, value = gate_dirs["project"], fake_secret("sk_live_")
    text = f"# app\nSTRIPE_KEY={value}\nDB_PASS=hunter2hunter\nDEBUG=true\n"
    text += "#" * ((1 - len(text)) % 3)  # its base64 ends in padding
    (project / ".env").write_text(text)
    encoded = base64.b64encode(text.encode()).decode()
    lines = [encoded[i : i + 76][::-1] for i in range(0, len(encoded), 76)]
    assert lines[-1].startswith("=") and len(lines) > 1
    turn = tool_turn("toolu_1", "Bash", {"command": "base64 notes.bak | rev"}, "\n".join(lines))
    client.messages.create(**conversation(str(project), turn))
    sent = provider.seen[-1].body.decode()
    assert lines[0] not in sent and "[gate: withheld a value from .env" in sent
