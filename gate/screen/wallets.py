"""Private keys of wallets and signing tools, verified by their checksum or structure."""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator, Sequence
from typing import Literal

from gate.screen.checksums import b58check, b58decode, bech32_decode

Verdict = Literal["keep", "demote"] | None

# Version bytes of BIP32 extended private keys (xprv, tprv; SLIP-132's yprv, zprv, Yprv,
# Zprv, uprv, vprv, Uprv, Vprv): the public ones (xpub...) are not secrets.
_XPRV_VERSIONS = frozenset(
    map(
        bytes.fromhex,
        [
            *("0488ade4", "04358394", "049d7878", "04b2430c", "0295b005"),
            *("02aa7a99", "044a4e28", "045f18bc", "024285b5", "02575048"),
        ],
    )
)
# Wallet import format: 0x80 (mainnet) or 0xef (testnet), 32 bytes, 0x01 if compressed.
_WIF_VERSIONS = (0x80, 0xEF)

# Secrets with no keyword are looked for in readings of the text with one byte per
# character (`Reading`): a class's characters as `a`, anything else `.`. A literal search
# for a long enough stretch of `a` (`stretches`) then finds where one could be. The
# readings are made from the keyword pass's lower-cased bytes, so each class holds both
# cases of a letter; what a stretch holds is then read in the text itself.
_TEXT = "abcdefghijklmnopqrstuvwxyz0123456789 \t\r\n,\"'.)?[]"  # seed phrases, number lists
_B58 = "abcdefghijklmnopqrstuvwxyz123456789"  # base58, lower-cased
TEXT_CLASS = bytes(0x61 if chr(c) in _TEXT else 0x2E for c in range(256))
ALNUM_CLASS = bytes(0x61 if chr(c).isascii() and chr(c).isalnum() else 0x2E for c in range(256))
B58_CLASS = bytes(0x61 if chr(c) in _B58 else 0x2E for c in range(256))
_B58_MIN = 51  # a WIF key's length; a keypair's is 87 or 88
_NUM_MIN = 129  # [ + 64 numbers + 63 commas + ]
# The shortest stretch of TEXT_CLASS a finder reads: the shortest 12 list words in a row
# a random phrase makes once in a million take 58 characters (mnemonic.py).
TEXT_RUN = b"a" * 58
_KEYPAIR = re.compile(r"\[\s*(?:\d{1,3}\s*,\s*){63}\d{1,3}\s*\]")


def xprv(m: re.Match[str], value: str) -> Verdict:
    """A BIP32 extended private key: base58check of 78 bytes, a private version, and a
    zero before the 32-byte key. One whose checksum fails is a typo or a fake: low."""
    raw = b58check(value)
    if raw is None or len(raw) != 78:
        return "demote"
    return "keep" if raw[:4] in _XPRV_VERSIONS and raw[45] == 0 else None


def nsec(m: re.Match[str], value: str) -> Verdict:
    """A Nostr secret key (NIP-19): bech32 of 32 bytes under `nsec`."""
    decoded = bech32_decode(value.lower())
    if decoded is None or decoded[0] != "nsec" or len(decoded[1]) != 32:
        return "demote"
    return "keep"


def minisign_key(m: re.Match[str], value: str) -> Verdict:
    """A minisign secret key: 158 bytes, `Ed`, the KDF `Sc` (or none), `B2`."""
    raw = _b64(value)
    return "keep" if len(raw) == 158 and raw[:2] == b"Ed" and raw[2:4] in (b"Sc", b"\0\0") else None


def signify_key(m: re.Match[str], value: str) -> Verdict:
    """A signify secret key: 104 bytes, `Ed`, the KDF `BK` (bcrypt)."""
    raw = _b64(value)
    return "keep" if len(raw) == 104 and raw[:4] == b"EdBK" else None


def _b64(value: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return b""


def wireguard(m: re.Match[str], value: str) -> Verdict:
    """A WireGuard `PrivateKey =`: base64 of 32 bytes. Under an `[Interface]` header (a
    wg-quick file, `wg showconf`) it is high; a lone line, low."""
    if len(_b64(value)) != 32:
        return None
    return "keep" if "[Interface]" in m.string[max(0, m.start() - 2000) : m.start()] else "demote"


# Hardhat's and Anvil's first default accounts (their docs print them; every local chain
# has them): keys everyone knows, never asked about.
_PUBLIC_KEYS = frozenset(
    (
        "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",
        "59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d",
        "5de4111afa1a4b94908f83103eb1f1706367c2e68ca870fc3fb9a804cdab365a",
    )
)
_NOT_A_KEY_NAME = re.compile(r"hash|fingerprint|digest|checksum|_id\b|path|file|pub", re.I)


def evm_key(m: re.Match[str], value: str) -> Verdict:
    """32 bytes in hex under a name that says private key (`PRIVATE_KEY=0x…`,
    `privateKey:`, `--private-key`): not a key's hash, file or public half."""
    name = m.group("name") if "name" in m.re.groupindex else None
    if name is not None and _NOT_A_KEY_NAME.search(name):
        return None
    return None if value.lower().removeprefix("0x") in _PUBLIC_KEYS else "keep"


class Reading:
    """A string and the stretches its finders read, each found once for all of them."""

    __slots__ = ("_base58", "_lowered", "_runs", "_text", "view")

    def alnum_stretches(self, shortest: int) -> Iterator[tuple[int, int]]:
        """Stretches of `shortest` or more ASCII letters and digits: one translate and a
        literal search (a token body with no prefix: checks.crc_bodies)."""
        return stretches(self._lowered.translate(ALNUM_CLASS), b"a" * shortest)

    def __init__(
        self, view: str, runs: Sequence[tuple[int, int]], lowered: bytes | None = None
    ) -> None:
        """`runs`: the string's base64 runs of 40+ characters (hidden.base64_runs), which
        hold every stretch of base58 long enough for a key. `lowered`: the string's
        lower-cased UTF-8, if the caller has it; used when it has one byte per character
        (ASCII), so offsets are the string's."""
        self.view = view
        if lowered is None or len(lowered) != len(view):
            lowered = view.encode("ascii", "replace").lower()
        self._lowered = lowered
        self._runs = runs
        self._text: list[tuple[int, int]] | None = None
        self._base58: list[tuple[int, int]] | None = None

    def text_stretches(self) -> list[tuple[int, int]]:
        """Stretches of TEXT_CLASS characters long enough for a seed phrase (a keypair's
        list of numbers is longer): one translate and one literal search. Stretches of
        letters and digits alone (digests, base64) are left: a phrase has blanks between
        its words, a list commas between its numbers."""
        if self._text is None:
            data = self._lowered
            self._text = [
                (start, end)
                for start, end in stretches(data.translate(TEXT_CLASS), TEXT_RUN)
                if not data[start:end].isalnum()
            ]
        return self._text

    def base58_stretches(self) -> list[tuple[int, int]]:
        """Stretches of base58 letters (and 0, I, O, l, which its check refuses) long enough
        for a WIF key. Base58 is inside base64's alphabet, so each lies in a base64 run:
        only the runs long enough are cut at their other characters (0 + / _ - =)."""
        if self._base58 is None:
            found, data = [], self._lowered
            for start, end in self._runs:
                if end - start < _B58_MIN:
                    continue
                at = start
                for piece in data[start:end].translate(B58_CLASS).split(b"."):
                    if len(piece) >= _B58_MIN:
                        found.append((at, at + len(piece)))
                    at += len(piece) + 1
            self._base58 = found
        return self._base58


def wif_spans(reading: Reading) -> Iterator[tuple[int, int]]:
    """Wallet-import-format keys wherever they are: 51 or 52 base58 letters alone, whose
    base58check holds (a random run passes once in 4 billion) and decodes to a key."""
    view = reading.view
    for start, end in reading.base58_stretches():
        if end - start in (51, 52) and _is_wif(view[start:end]):
            yield start, end


def keypair_spans(reading: Reading) -> Iterator[tuple[int, int]]:
    """Solana keypairs: a JSON list of 64 numbers as solana-keygen writes one
    (`~/.config/solana/id.json`), or the 64 bytes in base58 (87 or 88 letters, a wallet's
    export), whose last 32 bytes are the Ed25519 public key of the first 32: a list of
    small numbers or a base58 string never is by chance."""
    view = reading.view
    for start, end in reading.text_stretches():
        if end - start < _NUM_MIN or view.count(",", start, end) < 63:
            continue
        for m in _KEYPAIR.finditer(view, start, end):
            numbers = [int(n) for n in re.findall(r"\d+", m.group())]
            if max(numbers) <= 255 and _is_keypair(bytes(numbers)):
                yield m.start(), m.end()
    for start, end in reading.base58_stretches():
        raw = b58decode(view[start:end]) if end - start in (87, 88) else None
        if raw is not None and len(raw) == 64 and _is_keypair(raw):
            yield start, end


def stretches(reading: bytes, needle: bytes) -> Iterator[tuple[int, int]]:
    """Where `reading` (class bytes, `.` for any other character) holds a stretch of
    `needle`'s byte at least as long as it: `bytes.find` skips ahead by its length, so
    text without one costs about a millisecond per 2 MB."""
    at = reading.find(needle)
    while at != -1:
        end = reading.find(b".", at + len(needle))
        end = len(reading) if end == -1 else end
        yield at, end
        at = reading.find(needle, end)


def _is_wif(text: str) -> bool:
    raw = b58check(text)
    if raw is None or raw[0] not in _WIF_VERSIONS:
        return False
    return len(raw) == 33 or (len(raw) == 34 and raw[33] == 1)


def _is_keypair(raw: bytes) -> bool:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    public = Ed25519PrivateKey.from_private_bytes(raw[:32]).public_key()
    return public.public_bytes(Encoding.Raw, PublicFormat.Raw) == raw[32:]
