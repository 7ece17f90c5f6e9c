"""Private keys an agent prints in a form other than PEM: `openssl pkey -text` dumps (every
component as colon-separated hex), `openssl asn1parse` of a key (its integers or its
wrapped key as hex) and JSON Web Keys. Both read back into the key, so both
are high tier; their public halves are not secrets. The keys are made at run time, by the
real `openssl` where it is installed and by `cryptography` (a mitmproxy dependency)."""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, rsa

from gate.screen.secrets import Finding, Scanner, Tier

# `openssl genpkey` options per key type; DSA takes its parameters from a file made first.
GENPKEY = {
    "rsa": ["-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"],
    "ec": ["-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"],
    "ed25519": ["-algorithm", "ED25519"],
    "x25519": ["-algorithm", "X25519"],
    "ed448": ["-algorithm", "ED448"],
    "dh": ["-algorithm", "DH", "-pkeyopt", "group:ffdhe2048"],
    "dsa": [],
}
# The labels under which a dump prints a private component.
_PRIVATE = re.compile(
    r"^(privateExponent|prime1|prime2|exponent1|exponent2|coefficient|priv|private-key):$"
)
_HEX_LINE = re.compile(r"^\s+[0-9a-f]{2}(?::[0-9a-f]{2})*:?$")


@pytest.fixture(scope="module")
def scanner() -> Scanner:
    return Scanner()


def _openssl(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["openssl", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    where = tmp_path_factory.mktemp("keys")
    out = {}
    for name, opts in GENPKEY.items():
        if name == "dsa":
            _openssl(
                "genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt",
                "dsa_paramgen_bits:1024", "-out", "dsa.param", cwd=where,
            )  # fmt: skip
            opts = ["-paramfile", "dsa.param"]
        _openssl("genpkey", *opts, "-out", f"{name}.pem", cwd=where)
        out[name] = where / f"{name}.pem"
    return out


def _private_hex(dump: str) -> list[str]:
    """Each private component's hex lines, as printed."""
    out, inside = [], False
    for line in dump.splitlines():
        if _HEX_LINE.match(line):
            if inside:
                out.append(line.strip())
        else:
            inside = bool(_PRIVATE.match(line.strip()))
    return out


def _covers(findings: list[Finding], text: str, parts: list[str]) -> bool:
    """One high private-key finding whose span holds every part."""
    high = [f for f in findings if f.tier is Tier.HIGH and f.kind == "private-key"]
    return len(high) == 1 and all(p in text[high[0].start : high[0].end] for p in parts)


def _numbered(text: str) -> str:
    """As Claude Code's Read tool shows a file."""
    return "\n".join(f"{i:>6}→{line}" for i, line in enumerate(text.splitlines(), 1))


@pytest.mark.parametrize("kind", GENPKEY)
def test_a_private_key_printed_by_openssl_is_high_tier(
    scanner: Scanner, keys: dict[str, Path], kind: str
) -> None:
    dump = _openssl("pkey", "-in", str(keys[kind]), "-text", "-noout", cwd=keys[kind].parent)
    private = _private_hex(dump)
    assert private, dump  # the dump has private components to find
    command = f"$ openssl pkey -in ~/.ssh/{kind}.pem -text -noout\n{dump}$ echo done\n"
    assert _covers(scanner.scan(command), command, private), command
    # Inside a tool result as JSON-escaped text, and as a Read tool shows a saved copy.
    escaped = json.dumps({"output": command})
    assert _covers(scanner.scan(escaped), escaped, [json.dumps(p)[1:-1] for p in private])
    numbered = _numbered(command)
    assert _covers(scanner.scan(numbered), numbered, private)


@pytest.mark.parametrize("kind", GENPKEY)
def test_a_public_key_printed_by_openssl_is_not(
    scanner: Scanner, keys: dict[str, Path], kind: str
) -> None:
    dump = _openssl(
        "pkey", "-in", str(keys[kind]), "-pubout", "-text", "-noout", cwd=keys[kind].parent
    )
    assert "Public-Key" in dump or "public-key" in dump or "pub:" in dump, dump
    assert [f for f in scanner.scan(dump) if f.kind == "private-key"] == []


def test_the_legacy_rsa_command_and_an_openssl_1_1_header_are_read(
    scanner: Scanner, keys: dict[str, Path]
) -> None:
    dump = _openssl("rsa", "-in", str(keys["rsa"]), "-text", "-noout", cwd=keys["rsa"].parent)
    assert _covers(scanner.scan(dump), dump, _private_hex(dump))
    old = dump.replace("Private-Key:", "RSA Private-Key:", 1)  # OpenSSL 1.1's header
    found = scanner.scan(old)
    assert _covers(found, old, _private_hex(dump))
    assert old[found[0].start :].startswith("RSA Private-Key:")


@pytest.mark.parametrize(
    "text",
    [
        "Private-Key: (2048 bit, 2 primes)",  # a header alone, as docs quote it
        "the dump starts with `Private-Key:` and then modulus:",
        # A component label with too few bytes to be a key (a man page's elided example).
        "ED25519 Private-Key:\npriv:\n    00:11:22:...\npub:\n    33:44\n",
    ],
)
def test_a_dumps_shape_without_key_bytes_is_not(scanner: Scanner, text: str) -> None:
    assert scanner.scan(text) == []


def _b64u(n: int) -> str:
    return (
        base64.urlsafe_b64encode(n.to_bytes((n.bit_length() + 7) // 8, "big")).decode().rstrip("=")
    )


def _b64u_bytes(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def _jwks() -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """(private JWK, its public half) per key type, made now."""
    r = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_numbers()
    pub_rsa = {"kty": "RSA", "kid": "k1", "n": _b64u(r.public_numbers.n), "e": "AQAB"}
    e = ec.generate_private_key(ec.SECP256R1()).private_numbers()
    pub_ec = {
        "kty": "EC",
        "crv": "P-256",
        "x": _b64u(e.public_numbers.x),
        "y": _b64u(e.public_numbers.y),
    }
    o = ed25519.Ed25519PrivateKey.generate()
    raw = o.private_bytes_raw()
    pub_okp = {"kty": "OKP", "crv": "Ed25519", "x": _b64u_bytes(o.public_key().public_bytes_raw())}
    secret = _b64u_bytes(raw)  # a fresh 32 random bytes as an HS256 key
    return {
        "rsa": (
            {
                **pub_rsa,
                "d": _b64u(r.d),
                "p": _b64u(r.p),
                "q": _b64u(r.q),
                "dp": _b64u(r.dmp1),
                "dq": _b64u(r.dmq1),
                "qi": _b64u(r.iqmp),
            },
            pub_rsa,
        ),
        "ec": ({"d": _b64u(e.private_value), **pub_ec}, pub_ec),  # `d` before `kty`
        "okp": ({**pub_okp, "d": secret}, pub_okp),
        "oct": ({"kty": "oct", "alg": "HS256", "k": secret}, {"kty": "oct", "alg": "HS256"}),
    }


@pytest.mark.parametrize("kind", ["rsa", "ec", "okp", "oct"])
def test_a_private_json_web_key_is_high_tier_and_its_public_half_is_not(
    scanner: Scanner, kind: str
) -> None:
    private, public = _jwks()[kind]
    members = [v for k, v in private.items() if k in ("d", "p", "q", "dp", "dq", "qi", "k")]
    forms = [
        json.dumps(private),
        json.dumps({"keys": [public, private]}, indent=2),  # a JWKS file with both
        repr(private),  # a Python dict as printed
        json.dumps({"output": json.dumps(private)}),  # JSON-escaped in a tool result
    ]
    for text in forms:
        assert _covers(scanner.scan(text), text, members), text
    jwks = json.dumps({"keys": [public, public]}, indent=2)
    assert [f for f in scanner.scan(jwks) if f.kind == "private-key"] == []


@pytest.mark.parametrize("kind", GENPKEY)
def test_a_private_key_parsed_by_openssl_asn1parse_is_high_tier(
    scanner: Scanner, keys: dict[str, Path], kind: str
) -> None:
    """`openssl asn1parse -in key.pem` prints a PKCS#8 key's wrapped key as one hex dump,
    and a traditional RSA or EC key's integers and octets one per line."""
    where = keys[kind].parent
    forms = [_openssl("asn1parse", "-in", str(keys[kind]), cwd=where)]
    if kind in ("rsa", "ec"):  # the traditional (PKCS#1, SEC1) encoding too
        legacy = where / f"{kind}-legacy.pem"
        _openssl("pkey", "-in", str(keys[kind]), "-traditional", "-out", str(legacy), cwd=where)
        forms.append(_openssl("asn1parse", "-in", str(legacy), cwd=where))
    for dump in forms:
        longest = max(re.findall(r":([0-9A-F]{40,})$", dump, re.M), key=len)
        found = scanner.scan(dump)
        assert _covers(found, dump, [longest]), dump
        escaped = json.dumps({"output": dump})
        assert _covers(scanner.scan(escaped), escaped, [longest])


@pytest.mark.parametrize("kind", ["rsa", "ec", "ed25519"])
def test_a_public_key_or_certificate_parsed_by_asn1parse_is_not(
    scanner: Scanner, keys: dict[str, Path], kind: str
) -> None:
    where = keys[kind].parent
    public = where / f"{kind}.pub.pem"
    _openssl("pkey", "-in", str(keys[kind]), "-pubout", "-out", str(public), cwd=where)
    dumps = [_openssl("asn1parse", "-in", str(public), cwd=where)]
    cert = where / f"{kind}.crt"
    _openssl(
        "req", "-x509", "-key", str(keys[kind]), "-subj", "/CN=gate-test", "-days", "1",
        "-out", str(cert), cwd=where,
    )  # fmt: skip
    dumps.append(_openssl("asn1parse", "-in", str(cert), cwd=where))
    for dump in dumps:
        assert [f for f in scanner.scan(dump) if f.kind == "private-key"] == [], dump


def test_a_pem_key_indented_in_yaml_stays_high_tier(
    scanner: Scanner, keys: dict[str, Path]
) -> None:
    """Indentation is layout: a key block under a deep YAML key (a Helm chart's values, a
    Kubernetes Secret's stringData) was read as a hand-typed run of spaces and demoted."""
    pem = keys["rsa"].read_text()
    for depth in (2, 14, 24):
        pad = " " * depth
        text = "stringData:\n  tls.key: |\n" + "".join(
            pad + line + "\n" for line in pem.splitlines()
        )
        found = scanner.scan(text)
        assert [(f.kind, f.tier) for f in found] == [("private-key", Tier.HIGH)], depth
