"""Bytes printed one by one (gate/screen/dumps.py): the real `xxd`, `hexdump` and `od`, hex
pairs, characters spelled out and lists of characters or byte values are read back, so a
token in them is found at the high tier and the whole run withheld; ordinary text, data
and binary dumps are not findings."""

from __future__ import annotations

import json
import random
import shutil
import string
import subprocess
import zlib

import pytest

from gate.screen import dumps
from gate.screen.detectors import Tier
from gate.screen.secrets import Scanner

SCANNER = Scanner()

# (command, its tool): each prints the bytes it is given, one by one.
COMMANDS = [
    ("xxd", "xxd"),
    ("xxd -g1", "xxd"),
    ("xxd -u -c 12", "xxd"),
    ("xxd -g 4", "xxd"),
    ("hexdump -C", "hexdump"),
    ("hexdump", "hexdump"),
    ("od -c", "od"),
    ("od -An -c", "od"),
    ("od -A d -c", "od"),
    ("od -t x1", "od"),
    ("od -An -tx1", "od"),
    ("od -t x1 -w32", "od"),
    ("od -A x -t x1z", "od"),
    ("od -x", "od"),
    ("od -t x4", "od"),
    ("od -b", "od"),
    ("od", "od"),
    ("sed 's/./& /g'", "sed"),
    ("sed 's/./&\\n/g'", "sed"),
    ("xxd -i", "xxd"),  # a C array, twelve a line
    ("gzip -c | xxd -i", "xxd"),  # compressed bytes hold NULs and no newline or `=`
    ("lzma -c | xxd -p", "lzma"),
]


def _aws_key() -> str:
    rand = random.SystemRandom()
    return "AKIA" + "".join(rand.choice(string.ascii_uppercase + "234567") for _ in range(16))


def _env(key: str) -> bytes:
    return f"# app settings\nAWS_ACCESS_KEY_ID={key}\nPORT=8080\n".encode()


def _printed(command: str, data: bytes) -> str:
    done = subprocess.run(  # noqa: S602 (the test's own fixed commands)
        command, shell=True, input=data, capture_output=True, check=True
    )
    return done.stdout.decode()


@pytest.mark.parametrize(("command", "tool"), COMMANDS, ids=[c for c, _ in COMMANDS])
def test_a_token_in_a_dump_is_found_at_the_high_tier_over_the_whole_run(
    command: str, tool: str
) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"no {tool}")
    key = _aws_key()
    out = _printed(command, _env(key))
    assert key not in out  # no detector sees it as printed
    found = [f for f in SCANNER.scan(out) if f.rule_id == "aws.access-key-id"]
    assert found and found[0].tier is Tier.HIGH, out
    # The whole run is the finding: nothing of the key is left beside it.
    kept = out[: found[0].start] + out[found[0].end :]
    assert key[4:12] not in kept.replace(" ", "").replace("\n", "")


def _python_forms(data: bytes) -> list[str]:
    text = data.decode()
    return [
        str(list(data)),  # list(bytes)
        json.dumps(list(data)),  # Array.from(buffer), JSON
        str(list(text)),  # list(str)
        json.dumps(list(text)),
        data.hex(" "),
        data.hex(":"),
        data.hex(","),
        " ".join(text),
        "\n".join(text),
        "<Buffer " + data[:48].hex(" ") + " ... >",
        "".join(f"%{b:02X}" for b in data),  # every byte URL-escaped
        "".join(f"\\x{b:02x}" for b in data),  # printf '\x..', a bytes literal
        "".join(f"\\{b:03o}" for b in data),  # printf's octal
        "".join(f"\\u{b:04x}" for b in data),  # JSON's \u, escaped again
        "".join(f"&#{b};" for b in data),  # HTML entities
        "".join(f"&#x{b:x};" for b in data),
        ", ".join(f"0x{b:02x}" for b in data),  # a C array
        str([hex(b) for b in data]),  # Python's hex(): quoted, `0xa` for a newline
    ]


def test_lists_pairs_and_spelled_characters_are_read() -> None:
    key = _aws_key()
    data = f"AWS_ACCESS_KEY_ID={key}\n".encode()
    missed = [
        form
        for form in _python_forms(data)
        if not any(f.rule_id == "aws.access-key-id" for f in SCANNER.scan(f"out: {form}\ndone"))
    ]
    assert missed == []


@pytest.mark.parametrize(
    "sep", [",", ", ", ".", ":", ";", "|", "/", "\\", "-", "*", "+", "#", "\t", " ", "\n"]
)
def test_a_token_joined_by_any_one_separator_is_read(sep: str) -> None:
    """`sep.join(token)`, `sed 's/./&-/g'`: every other character (every third after `, `)
    is the token. Only spaces and line breaks were read: the other 13 hid it."""
    token = "ghp_" + "".join(random.Random(sep).choices(string.ascii_letters + string.digits, k=30))
    token += _crc(token[4:])
    text = f"$ python3 -c 'print(sep.join(t))'\n{sep.join(token)}\nexit 0\n"
    found = [f for f in SCANNER.scan(text) if f.rule_id == "github.token"]
    assert [f.tier for f in found] == [Tier.HIGH]
    # Over the joined run (one a line, with the line before's last character and the
    # next's first: a line's end may be the token's first character, `x = g`).
    at = text.index(sep.join(token))
    grown = 2 if sep == "\n" else 0  # a character and its line break
    assert at - grown <= found[0].start <= at
    assert at + len(sep.join(token)) <= found[0].end <= at + len(sep.join(token)) + grown


@pytest.mark.parametrize("sep", [",", ".", "-", "|", "\n"])
def test_a_joined_token_is_read_whatever_is_beside_it(sep: str) -> None:
    """Other triggers' runs after it (each trigger is walked on its own), 10,000 decoys
    before it, and one a line with text on the first and last lines."""
    token = "ghp_" + "".join(random.Random(sep).choices(string.ascii_letters + string.digits, k=30))
    token += _crc(token[4:])
    joined = sep.join(token)
    for text in (
        f"v = {joined}\nnote: a _ b _ c _ d _ e _ f _ g _ h\nk = a,_,b,_,c,_,d,_,e,_,f\n",
        "a,_,b\n" * 10_001 + f"v = {joined}\n",
        f"x = {joined} end\n",
    ):
        found = [f for f in SCANNER.scan(text) if f.rule_id == "github.token"]
        assert [f.tier for f in found] == [Tier.HIGH], text[-200:]


def _crc(body: str) -> str:
    from gate.screen.checks import base62

    return base62(zlib.crc32(body.encode()))


def test_a_dump_inside_json_escaped_text_is_read() -> None:
    key = _aws_key()
    out = _printed("xxd", _env(key)) if shutil.which("xxd") else _env(key).hex(" ")
    escaped = json.dumps({"output": out})  # newlines as `\n`, as a raw body carries them
    assert any(f.rule_id == "aws.access-key-id" for f in SCANNER.scan(escaped))


# A token printed as escapes or one character at a time by code, then printed again as a
# JSON string (`print(json.dumps(...))`, an API's response): each backslash escaped once
# more, each newline a `\n`.
JSON_TWICE = {
    "\\x escapes": lambda t: "".join(f"\\x{ord(c):02x}" for c in t),
    "\\u escapes": lambda t: "".join(f"\\u{ord(c):04x}" for c in t),
    "octal": lambda t: "".join(f"\\{ord(c):03o}" for c in t),
    "one a line": lambda t: "\n".join(t),
    "one a line, CRLF": lambda t: "\r\n".join(t),
    "tab-joined": lambda t: "\t".join(t),
    "each behind a backslash": lambda t: "".join("\\" + c for c in t),
}


@pytest.mark.parametrize("form", JSON_TWICE)
def test_a_token_spelled_out_inside_json_escaped_text_is_read(form: str) -> None:
    # (No `n`, `r` or `t`: behind a backslash, JSON-escaped, they read as line breaks and
    # tabs, which end a spelled run; docs/guarantees.md says so.)
    alphabet = "".join(c for c in string.ascii_letters + string.digits if c not in "nrt")
    body = "".join(random.Random(form).choices(alphabet, k=30))
    token = "ghp_" + body + _crc(body)
    if any(c in "nrt" for c in token):  # the checksum's characters
        token = "ghp_" + (body := body[::-1]) + _crc(body)
    assume = form != "each behind a backslash" or not any(c in "nrt" for c in token)
    assert assume, "pick another seed: the checksum spells n, r or t"
    printed = f"$ python leak.py\n{JSON_TWICE[form](token)}\nexit 0\n"
    texts = [printed, json.dumps({"output": printed})]
    if "escapes" in form or form == "octal":  # escapes JSON-escaped twice too (not spelled)
        texts.append(json.dumps({"output": json.dumps({"output": printed})}))
    for text in texts:
        found = SCANNER.scan(text)
        assert any(f.rule_id.startswith("github.") and f.tier is Tier.HIGH for f in found), text


@pytest.mark.parametrize("sep", [", ", " ", "\t", "\n"], ids=["comma", "blank", "tab", "line"])
def test_a_token_as_0x_bytes_is_read_whatever_separates_them(sep: str) -> None:
    """`printf '0x%02x ' ...`: bytes as 0x literals, a blank or a line break between."""
    body = "".join(random.Random(sep).choices(string.ascii_letters + string.digits, k=30))
    token = "ghp_" + body + _crc(body)
    text = "bytes: " + sep.join(f"0x{b:02x}" for b in token.encode()) + "\n"
    found = SCANNER.scan(text)
    assert [f.rule_id for f in found] == ["github.token"], found


def test_escaped_backslashes_in_paths_are_no_escapes() -> None:
    """A JSON-escaped Windows path (`C:\\x64\\...`) decodes to a few letters, no finding."""
    text = json.dumps({"path": "C:\\x64\\u2019\\Program Files\\x86\\012\\1234"})
    assert SCANNER.scan(text) == []


HARMLESS = [
    "\n".join(
        f"{i:08x}: " + " ".join(f"{(i * 7 + j) % 65536:04x}" for j in range(8))
        for i in range(0, 640, 16)
    ),
    "0000000 " + " ".join(["00"] * 16) + "\n*\n0000400\n",
    json.dumps([random.Random(3).randrange(256) for _ in range(400)]),  # binary as numbers
    json.dumps(list("hello world, nothing to see here, move along")),
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
    "\n".join("the quick brown fox jumps over the lazy dog"),
    "created_at: 2024-01-01 00:00:00.000000 updated_at: 2024-01-02 00:00:00.000000",
    "x = 1\ny = 2\nfor i in range(10): a[i] = i _ = 3\n" * 50,
    "a = b = c = d = e = f = g = h = i = j = k - l - m _ n",
    "%20%20%20%20%20%20%20%20%20%2d%2d%2d%2d%2d%2d%2d%2d%2d",
    "&#60;&#61;&#62;&#60;&#61;&#62;&#60;&#61;&#62;&#60;&#61;&#62;",
    "static const uint8_t table[] = {0x00, 0x01, 0x2d, 0x3d, 0x5f, 0xff, 0x10, 0x20, 0x30};",
    "regs: 0x10 0x20 0x30 0x40 0x0a 0x50 0x60 0x70 0x80 0x90 0x5f 0x2d",  # no text in them
    "MAC 00:1a:2b:3c:4d:5e:6f:70:81:92 and fingerprint SHA256 ab:cd:ef:01:23:45:67:89:ab",
]


@pytest.mark.parametrize("text", HARMLESS, ids=range(len(HARMLESS)))
def test_ordinary_text_and_data_are_not_findings(text: str) -> None:
    assert SCANNER.scan(text) == []


def test_binary_dumps_are_read_and_hold_nothing() -> None:
    if shutil.which("xxd") is None:
        pytest.skip("no xxd")
    blob = random.Random(5).randbytes(4096)
    out = _printed("xxd", blob)
    assert [d for _, _, d in dumps.spans(out)] == [blob]  # read back exactly, as one run
    assert SCANNER.scan(out) == []


def test_dump_reading_never_raises_on_dump_like_junk() -> None:
    rand = random.Random(11)
    pieces = [
        "0000000",
        "00000010:",
        " ",
        "  ",
        "   ",
        "\n",
        "|",
        ">",
        "<",
        "*",
        "\\n",
        "\\0",
        "ff",
        "0a",
        "3d",
        "5f",
        "494",
        "777",
        "=",
        "_",
        "', '",
        ", 61, ",
        "999",
        "a",
        "Z",
        "-1",
        "-",
        "00101101 ",
        "  12345",
        "4ee9 ",
    ]
    for _ in range(3000):
        text = "".join(rand.choice(pieces) for _ in range(rand.randrange(5, 120)))
        for start, end, data in dumps.spans(text):
            assert 0 <= start < end <= len(text) and isinstance(data, bytes)
        SCANNER.scan(text)


def test_a_dump_line_of_negative_numbers_is_no_dump() -> None:
    # `int()` reads a sign: a cell "-1" once made the read raise, which blocks a request.
    assert list(dumps.spans("0000000 -1 -2 -3 -4 -5 -6 -7 -8 -9\n")) == []
