"""Offline checksums of key encodings: base58check (Bitcoin) and bech32 (BIP 173)."""

from __future__ import annotations

import hashlib

B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_B58_INDEX = {c: i for i, c in enumerate(B58)}
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
_BECH32_INDEX = {c: i for i, c in enumerate(BECH32)}
_GEN = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)


def b58decode(text: str) -> bytes | None:
    """The bytes `text` spells in Bitcoin's base58 (leading `1`s are zero bytes), or None
    when a character is outside the alphabet."""
    n = 0
    for c in text:
        digit = _B58_INDEX.get(c)
        if digit is None:
            return None
        n = n * 58 + digit
    body = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return b"\0" * (len(text) - len(text.lstrip("1"))) + body


def b58check(text: str) -> bytes | None:
    """The payload of a base58check string whose last four bytes are the first four of
    the double SHA-256 of the rest; None when they are not (a random string passes once
    in 4 billion)."""
    raw = b58decode(text)
    if raw is None or len(raw) < 5:
        return None
    payload, check = raw[:-4], raw[-4:]
    return (
        payload if hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4] == check else None
    )


def b58encode(raw: bytes) -> str:
    n = int.from_bytes(raw, "big")
    out = ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def b58check_encode(payload: bytes) -> str:
    return b58encode(payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4])


def _polymod(values: list[int]) -> int:
    chk = 1
    for v in values:
        top = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= _GEN[i] if (top >> i) & 1 else 0
    return chk


def _expand(hrp: str) -> list[int]:
    return [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]


def bech32_decode(text: str) -> tuple[str, bytes] | None:
    """(human-readable part, data bytes) of a lower-case bech32 string whose checksum holds
    (BIP 173: a random string passes about once in a billion), else None."""
    hrp, sep, data = text.rpartition("1")
    if not sep or not hrp or len(data) < 6:
        return None
    values = [_BECH32_INDEX.get(c, -1) for c in data]
    if -1 in values or _polymod(_expand(hrp) + values) != 1:
        return None
    acc, bits, out = 0, 0, bytearray()
    for v in values[:-6]:  # 5-bit groups to bytes; the padding left over must be zero
        acc, bits = acc << 5 | v, bits + 5
        if bits >= 8:
            bits -= 8
            out.append(acc >> bits & 0xFF)
    if bits >= 5 or acc & ((1 << bits) - 1):
        return None
    return hrp, bytes(out)


def bech32_encode(hrp: str, raw: bytes) -> str:
    acc, bits, values = 0, 0, []
    for b in raw:
        acc, bits = acc << 8 | b, bits + 8
        while bits >= 5:
            bits -= 5
            values.append(acc >> bits & 31)
    if bits:
        values.append(acc << (5 - bits) & 31)
    mod = _polymod([*_expand(hrp), *values, 0, 0, 0, 0, 0, 0]) ^ 1
    check = [(mod >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(BECH32[v] for v in values + check)
