"""Wallet and signing keys (rules/secrets/wallets.yaml): found whole and high where their
checksum or structure holds, silent on look-alikes (xpub, a phrase whose checksum fails,
hashes, lists of small numbers, prose made of list words)."""

from __future__ import annotations

import base64
import hashlib
import json
import random
import re
from pathlib import Path

import pytest

from gate.errors import RuleError
from gate.screen import checksums, mnemonic
from gate.screen.detectors import load_detectors, load_text
from gate.screen.secrets import Finding, Scanner, Tier
from screen import wallet_corpus as W
from screen.secrets_corpus import CONTEXTS, Gen, Secret, assemble


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def _found(scanner: Scanner, text: str) -> list[tuple[str, str, Tier]]:
    return [(f.rule_id, text[f.start : f.end], f.tier) for f in scanner.scan(text)]


@pytest.mark.parametrize("context", list(CONTEXTS))
def test_each_detector_finds_its_whole_key(scanner: Scanner, context: str) -> None:
    """Raw, JSON-escaped inside a tool result, and numbered as a Read tool shows a file."""
    for rule, label, parts in W.wallet_specs(Gen(21), Secret):
        text, (span,) = assemble(CONTEXTS[context](parts))
        findings = [(f.start, f.end, f.rule_id, f.tier) for f in scanner.scan(text)]
        assert findings == [(*span, rule, Tier.HIGH)], (label, text[:200])


# -- BIP39 seed phrases -------------------------------------------------------------------


def test_the_wordlist_is_the_standards() -> None:
    path = Path(mnemonic.__file__).parent / "bip39_english.txt"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == mnemonic.WORDLIST_SHA256
    assert len(mnemonic.wordlist()) == 2048


@pytest.mark.parametrize("n", mnemonic.LENGTHS)
def test_a_phrase_of_each_length_is_found_in_each_form(scanner: Scanner, n: int) -> None:
    rng = random.Random(n)
    phrase = W.mnemonic(rng, n)
    words = phrase.split()
    forms = {
        "env": f'MNEMONIC="{phrase}"\n',
        "json": json.dumps({"mnemonic": phrase}),
        "lines": "\n".join(words) + "\n",
        "numbered": " ".join(f"{i}. {w}" for i, w in enumerate(words, 1)),
        "list": "\n".join(f"{i:2d}) {w}" for i, w in enumerate(words, 1)),
        "array": json.dumps(words),
        "prose": f"My recovery phrase is {phrase}, keep it safe.",
    }
    for name, text in forms.items():
        (found,) = scanner.scan(text)
        assert (found.rule_id, found.tier) == ("bip39.mnemonic", Tier.HIGH), name
        assert re.findall("[a-z]+", text[found.start : found.end]) == words, name


def test_a_phrase_inside_a_longer_run_of_list_words_is_found_exactly(scanner: Scanner) -> None:
    rng = random.Random(5)
    phrase = W.mnemonic(rng, 24)
    text = f"seed word: write {phrase}"
    (f,) = scanner.scan(text)
    assert text[f.start : f.end] == phrase  # all 24 words, not a 12-word part


def test_phrases_one_per_line_and_a_phrase_over_two_lines(scanner: Scanner) -> None:
    rng = random.Random(7)
    a, b = W.mnemonic(rng, 12), W.mnemonic(rng, 12)
    text = f"{a}\n{b}\n"
    assert [text[f.start : f.end] for f in scanner.scan(text)] == [a, b]
    long = W.mnemonic(rng, 24).split()
    text = " ".join(long[:12]) + "\n" + " ".join(long[12:])
    assert [text[f.start : f.end] for f in scanner.scan(text)] == [text]


@pytest.mark.parametrize("n", mnemonic.LENGTHS)
def test_a_phrase_whose_checksum_fails_is_not_found(scanner: Scanner, n: int) -> None:
    rng = random.Random(100 + n)
    for _ in range(20):
        assert scanner.scan(f'MNEMONIC="{W.mnemonic(rng, n, valid=False)}"\n') == []
        words = W.mnemonic(rng, n).split()  # a typo: one word changed
        words[rng.randrange(n)] = rng.choice(W.words())
        if not mnemonic.is_phrase([mnemonic.wordlist()[w] for w in words]):
            assert scanner.scan(" ".join(words)) == []


def test_random_list_words_pass_the_checksum_about_once_in_16() -> None:
    rng = random.Random(9)
    passed = sum(mnemonic.is_phrase(rng.sample(range(2048), 12)) for _ in range(8000))
    assert 8000 / 16 * 0.8 < passed < 8000 / 16 * 1.2


def test_known_phrases_the_list_and_prose_are_not_found(scanner: Scanner) -> None:
    words = W.words()
    texts = [
        "abandon " * 11 + "about",  # BIP39's first test vector
        "legal winner thank year wave sausage worth useful legal winner thank yellow",
        "test test test test test test test test test test test junk",  # Hardhat's
        "\n".join(words),  # the list itself
        "We are able to abandon the old build; about time. The ability to absorb the "
        "abstract cost is absurd, so access to the account stays above the actual action.",
        # list words in a row that make no phrase
        "either fatal rude kind ocean flat rule clarify spring unable human tribe hundred",
    ]
    for text in texts:
        assert [f for f in scanner.scan(text) if f.rule_id == "bip39.mnemonic"] == [], text[:40]


# -- Bitcoin ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("compressed", "testnet"), [(True, False), (False, False), (True, True), (False, True)]
)
def test_wif_keys_are_found_and_a_changed_letter_is_not(
    scanner: Scanner, compressed: bool, testnet: bool
) -> None:
    key = W.wif(random.Random(3), compressed, testnet)
    assert key[0] in ("c" if compressed else "9") if testnet else ("KL" if compressed else "5")
    assert _found(scanner, f"{key}\n") == [("bitcoin.wif", key, Tier.HIGH)]
    changed = key[:20] + ("2" if key[20] != "2" else "3") + key[21:]
    assert _found(scanner, f"{changed}\n") == []


def test_base58check_agrees_with_an_independent_encoder() -> None:
    rng = random.Random(4)
    for n in (1, 21, 33, 78):
        payload = rng.randbytes(n)
        assert checksums.b58check(W.b58check(payload)) == payload
        assert checksums.b58check_encode(payload) == W.b58check(payload)


def test_extended_private_keys_are_found_public_ones_are_not(scanner: Scanner) -> None:
    rng = random.Random(6)
    for version, prefix in ((W.XPRV, "xprv"), (W.TPRV, "tprv"), (W.ZPRV, "zprv")):
        key = W.extended(rng, version)
        assert key.startswith(prefix)
        assert _found(scanner, f"key: {key}\n") == [("bitcoin.xprv", key, Tier.HIGH)]
    xpub = W.extended(rng, W.XPUB)
    assert xpub.startswith("xpub") and _found(scanner, f"key: {xpub}\n") == []
    key = W.extended(rng)
    broken = key[:-1] + ("2" if key[-1] != "2" else "3")
    assert _found(scanner, f"key: {broken}\n") == [("bitcoin.xprv", broken, Tier.LOW)]


# -- Ethereum -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "template",
    [
        "PRIVATE_KEY={k}\n",
        "export DEPLOYER_PRIVATE_KEY=0x{k}\n",
        'const wallet = new Wallet({{ privateKey: "0x{k}" }});',
        '{{"private_key": "{k}"}}',
        "forge script Deploy --rpc-url $RPC --private-key 0x{k} --broadcast",
        "Private key: 0x{k}",
        "eth:\n  privkey: '{k}'\n",
    ],
)
def test_a_hex_key_under_a_private_key_name_is_high(scanner: Scanner, template: str) -> None:
    k = Gen(8).hex(64)
    text = template.format(k=k)
    (f,) = scanner.scan(text)
    assert (f.rule_id, f.tier) == ("ethereum.private-key", Tier.HIGH)
    assert text[f.start : f.end].removeprefix("0x") == k


@pytest.mark.parametrize(
    "template",
    [
        "commit: {k}\n",
        "sha256: {k}\n",
        "0x{k}\n",
        "private_key_hash = {k}\n",
        "PRIVATE_KEY_FINGERPRINT={k}\n",
        "public_key: 0x{k}\n",
        "privateKeyPath: /keys/{k}\n",
    ],
)
def test_hex_hashes_and_other_names_are_not_keys(scanner: Scanner, template: str) -> None:
    text = template.format(k=Gen(9).hex(64))
    assert [f for f in scanner.scan(text) if f.tier is Tier.HIGH] == []


def test_hardhats_public_test_accounts_are_not_asked_about(scanner: Scanner) -> None:
    anvil = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
    for text in (f"PRIVATE_KEY=0x{anvil}\n", f'accounts: ["0x{anvil}"]'):
        assert [f for f in scanner.scan(text) if f.tier is Tier.HIGH] == []


def test_every_key_of_a_hardhat_accounts_list_is_taken(scanner: Scanner) -> None:
    g = Gen(10)
    a, b = "0x" + g.hex(64), "0x" + g.hex(64)
    text = f'sepolia: {{ url: RPC, accounts: ["{a}", "{b}"] }}'
    assert _found(scanner, text) == [("ethereum.hardhat-accounts", f'{a}", "{b}', Tier.HIGH)]


# -- Solana -------------------------------------------------------------------------------


def test_solana_keypairs_are_found_in_each_layout(scanner: Scanner) -> None:
    pair = list(W.keypair(random.Random(12)))
    for text in (
        json.dumps(pair, separators=(",", ":")),
        json.dumps(pair),
        json.dumps(pair, indent=2),
        W.b58(bytes(pair)),
    ):
        assert _found(scanner, f"$ cat id.json\n{text}\n") == [("solana.keypair", text, Tier.HIGH)]


def test_lists_of_64_numbers_that_are_no_keypair_are_not_found(scanner: Scanner) -> None:
    rng = random.Random(13)
    seed = W.keypair(rng)[:32]
    for numbers in (
        [rng.randrange(256) for _ in range(64)],
        [*seed, *rng.randbytes(32)],  # a seed beside another key's public half
        list(range(64)),
        [rng.randrange(1000) for _ in range(64)],
    ):
        assert scanner.scan(json.dumps(numbers)) == []
    assert scanner.scan(W.b58(rng.randbytes(64))) == []


# -- Nostr, WireGuard, minisign, signify, Tor ---------------------------------------------


def test_nsec_keys_are_checked(scanner: Scanner) -> None:
    key = W.nsec(random.Random(14))
    assert _found(scanner, f"nsec: {key}") == [("nostr.nsec", key, Tier.HIGH)]
    broken = key[:-1] + ("q" if key[-1] != "q" else "p")
    assert _found(scanner, f"nsec: {broken}") == [("nostr.nsec", broken, Tier.LOW)]
    npub = W.bech32_encode("npub", random.Random(15).randbytes(32))
    assert scanner.scan(f"npub: {npub}") == []


def test_bech32_agrees_with_an_independent_encoder_and_the_standards_vectors() -> None:
    raw = random.Random(20).randbytes(32)
    assert checksums.bech32_encode("nsec", raw) == W.bech32_encode("nsec", raw)
    assert checksums.bech32_decode(W.bech32_encode("nsec", raw)) == ("nsec", raw)
    assert checksums.bech32_decode("a12uel5l") == ("a", b"")
    assert checksums.bech32_decode("abcdef1qpzry9x8gf2tvdw0s3jn54khce6mua7lmqqqxw") is not None
    assert checksums.bech32_decode("a12uel5m") is None


def test_wireguard_keys_are_high_under_an_interface(scanner: Scanner) -> None:
    key = base64.b64encode(random.Random(16).randbytes(32)).decode()
    conf = f"[Interface]\nPrivateKey = {key}\nListenPort = 51820\n"
    assert _found(scanner, conf) == [("wireguard.private-key", key, Tier.HIGH)]
    assert _found(scanner, f"PrivateKey = {key}\n") == [("wireguard.private-key", key, Tier.LOW)]
    assert scanner.scan(f"[Peer]\nPublicKey = {key}\n") == []


def test_minisign_and_signify_public_keys_are_not_secret_keys(scanner: Scanner) -> None:
    rng = random.Random(17)
    minisign_pub = base64.b64encode(b"Ed" + rng.randbytes(40)).decode()
    signify_pub = base64.b64encode(b"EdBK" + rng.randbytes(38)).decode()
    for text in (
        f"untrusted comment: minisign public key 1234\n{minisign_pub}\n",
        f"untrusted comment: signify public key\n{signify_pub}\n",
        f"untrusted comment: signature from minisign secret key\n{W.signify(rng)[:-4]}AA==\n",
    ):
        assert [f for f in scanner.scan(text) if f.tier is Tier.HIGH] == [], text


def test_an_onion_service_key_in_base64_is_found(scanner: Scanner) -> None:
    key = W.onion(random.Random(18))
    assert _found(scanner, f"{key}\n") == [("tor.onion-secret-key", key, Tier.HIGH)]


# -- the finder: field --------------------------------------------------------------------

FINDER = """schemaVersion: 1
detectors:
  - id: acme.phrase
    kind: seed-phrase
    tier: high
    finder: bip39
    docs: https://example.com/format
"""


def test_a_finder_detector_loads_and_finds(tmp_path: Path) -> None:
    (tmp_path / "acme.yaml").write_text(FINDER)
    (det,) = load_detectors(tmp_path)
    assert det.finder == "bip39" and det.keywords == ()
    phrase = W.mnemonic(random.Random(19))
    assert Scanner([det]).scan(f"x {phrase}") == [
        Finding(2, 2 + len(phrase), "seed-phrase", "acme.phrase", Tier.HIGH)
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (FINDER.replace("bip39", "nope"), "unknown finder 'nope'"),
        (FINDER + "    keywords: [seed]\n", "a detector with finder: has no keywords:"),
        (FINDER + "    pattern: 'x'\n", "a detector with finder: has no pattern:"),
        (FINDER.replace("    tier: high\n", ""), "detector has no tier:"),
    ],
)
def test_finder_errors_name_file_and_line(text: str, message: str) -> None:
    with pytest.raises(RuleError) as info:
        load_text(text, "acme.yaml")
    assert message in info.value.message and info.value.where.startswith("acme.yaml:")
