"""Wallet and signing keys (rules/secrets/wallets.yaml), built at run time from random
bytes with their checksums computed here, and the look-alikes that must stay quiet.

Nothing here is a real key: every value is fresh randomness in the documented layout
(BIP39, base58check, BIP32, Ed25519 keypairs, bech32, minisign, signify, Tor).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

# Built without gate's own code: bench/scan.py runs this corpus against older trees too.
WORDLIST = Path(__file__).resolve().parents[2] / "gate" / "screen" / "bip39_english.txt"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
XPRV, TPRV, ZPRV = bytes.fromhex("0488ade4"), bytes.fromhex("04358394"), bytes.fromhex("04b2430c")
XPUB = bytes.fromhex("0488b21e")


@cache
def words() -> list[str]:
    return WORDLIST.read_text(encoding="ascii").split()


def bech32_encode(hrp: str, raw: bytes) -> str:
    """BIP 173: 5-bit groups, then a BCH checksum over the expanded prefix and the data."""
    acc, bits, values = 0, 0, []
    for b in raw:
        acc, bits = acc << 8 | b, bits + 8
        while bits >= 5:
            bits -= 5
            values.append(acc >> bits & 31)
    if bits:
        values.append(acc << (5 - bits) & 31)
    chk = 1
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    for v in [*expanded, *values, 0, 0, 0, 0, 0, 0]:
        top, chk = chk >> 25, (chk & 0x1FFFFFF) << 5 ^ v
        for i, gen in enumerate((0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)):
            chk ^= gen if top >> i & 1 else 0
    mod = chk ^ 1
    return (
        hrp + "1" + "".join(BECH32[v] for v in values + [mod >> 5 * (5 - i) & 31 for i in range(6)])
    )


def mnemonic(rng: random.Random, n: int = 12, valid: bool = True) -> str:
    """n words: entropy, then the first n/3 bits of its SHA-256 (flipped if not valid)."""
    entropy = rng.randbytes(n * 4 // 3)
    check = hashlib.sha256(entropy).digest()[0] >> (8 - n // 3)
    if not valid:
        check ^= 1
    bits = int.from_bytes(entropy, "big") << (n // 3) | check
    wl = words()
    return " ".join(wl[bits >> 11 * (n - 1 - k) & 2047] for k in range(n))


def b58check(payload: bytes) -> str:
    raw = payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]
    n, out = int.from_bytes(raw, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def wif(rng: random.Random, compressed: bool = True, testnet: bool = False) -> str:
    return b58check(bytes([0xEF if testnet else 0x80]) + rng.randbytes(32) + b"\1" * compressed)


def extended(rng: random.Random, version: bytes = XPRV) -> str:
    """A BIP32 extended key: version, depth, parent fingerprint, child number, chain
    code, then 0x00 and the private key (or a compressed public point)."""
    key = b"\0" + rng.randbytes(32) if version != XPUB else bytes([2]) + rng.randbytes(32)
    return b58check(version + bytes([3]) + rng.randbytes(8) + rng.randbytes(32) + key)


def keypair(rng: random.Random) -> bytes:
    seed = rng.randbytes(32)
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key()
    return seed + public.public_bytes(Encoding.Raw, PublicFormat.Raw)


def b58(raw: bytes) -> str:
    n, out = int.from_bytes(raw, "big"), ""
    while n:
        n, r = divmod(n, 58)
        out = B58[r] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def nsec(rng: random.Random) -> str:
    return bech32_encode("nsec", rng.randbytes(32))


def minisign(rng: random.Random) -> str:
    return base64.b64encode(b"EdScB2" + rng.randbytes(152)).decode()


def signify(rng: random.Random) -> str:
    return base64.b64encode(b"EdBK" + rng.randbytes(100)).decode()


def onion(rng: random.Random) -> str:
    return base64.b64encode(b"== ed25519v1-secret: type0 ==\0\0\0" + rng.randbytes(64)).decode()


def wallet_specs(g: Any, secret: Callable[[str], Any]) -> Iterator[tuple[str, str, list[Any]]]:
    """(rule id, label, parts), one per detector, as the labelled corpus takes them."""
    rng = g.rng
    yield "bip39.mnemonic", "env", ['MNEMONIC="', secret(mnemonic(rng, 24)), '"\nRPC_URL=x\n']
    yield "bitcoin.wif", "dumpprivkey", ["$ bitcoin-cli dumpprivkey bc1q\n", secret(wif(rng)), "\n"]
    yield "bitcoin.xprv", "json", ['{"xprv": "', secret(extended(rng)), '", "path": "m/84h"}\n']
    yield (
        "ethereum.private-key",
        "env",
        ["RPC_URL=https://rpc.example\nDEPLOYER_PRIVATE_KEY=", secret("0x" + g.hex(64)), "\n"],
    )
    yield (
        "ethereum.hardhat-accounts",
        "config",
        ["networks: { sepolia: { url: RPC, accounts: ['", secret("0x" + g.hex(64)), "'] } }\n"],
    )
    yield (
        "solana.keypair",
        "id.json",
        [
            "$ cat ~/.config/solana/id.json\n",
            secret(json.dumps(list(keypair(rng)), separators=(",", ":"))),
            "\n",
        ],
    )
    yield "nostr.nsec", "env", ["NOSTR_KEY=", secret(nsec(rng)), "\n"]
    yield (
        "wireguard.private-key",
        "wg0.conf",
        [
            "[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = ",
            secret(base64.b64encode(rng.randbytes(32)).decode()),
            "\n\n[Peer]\nEndpoint = vpn.example:51820\n",
        ],
    )
    yield (
        "minisign.secret-key",
        "file",
        ["untrusted comment: minisign encrypted secret key\n", secret(minisign(rng)), "\n"],
    )
    yield (
        "signify.secret-key",
        "file",
        ["untrusted comment: signify secret key\n", secret(signify(rng)), "\n"],
    )
    yield (
        "tor.onion-secret-key",
        "base64",
        ["$ base64 -w0 hs_ed25519_secret_key\n", secret(onion(rng)), "\n"],
    )


def wallet_harmless(g: Any) -> Iterator[tuple[str, str]]:
    """(family, text): what looks like the above and is not a secret."""
    rng = g.rng
    yield "xpub", f"xpub: {extended(rng, XPUB)}\n"
    yield "bad-mnemonic", f'MNEMONIC="{mnemonic(rng, 12, valid=False)}"\n'
    yield "wordlist", "\n".join(words()[400:430]) + "\n"
    yield "commit-hash", f"commit: {g.hex(64)}\nsha256: {g.hex(64)}\nchecksum = 0x{g.hex(64)}\n"
    yield "small-ints", json.dumps([rng.randrange(256) for _ in range(64)]) + "\n"
    yield (
        "bip39-prose",
        (
            "We are able to abandon the old build; about time. The ability to absorb the abstract"
            " cost is absurd, so access to the account stays above the rest of the actual action.\n"
        ),
    )
    yield (
        "pubkey-names",
        (
            f"public_key: 0x{g.hex(64)}\nprivate_key_hash = {g.hex(64)}\n"
            f"PublicKey = {base64.b64encode(rng.randbytes(32)).decode()}\n"
        ),
    )
    yield (
        "signify-pub",
        (
            "untrusted comment: signify public key\n"
            + base64.b64encode(b"EdBK" + rng.randbytes(38)).decode()
            + "\n"
        ),
    )
