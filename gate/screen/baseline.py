"""Known findings for `gate scan --baseline`: fingerprints that never hold a value."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from gate.errors import GateError

VERSION = 1
# A baseline is committed and shared, so no per-install key can salt it; a slow hash makes
# guessing a short password from its fingerprint costly (high-tier tokens are unguessable).
ITERATIONS = 20_000


@dataclass(frozen=True, slots=True)
class Known:
    fingerprint: str
    path: str
    rule_id: str
    line: int


def fingerprint(rule_id: str, path: str, value: str) -> str:
    """The same secret under the same detector in the same file: stable when lines move."""
    salt = f"gate-baseline\0{rule_id}\0{path}".encode()
    return hashlib.pbkdf2_hmac(
        "sha256", value.encode("utf-8", "surrogatepass"), salt, ITERATIONS
    ).hex()[:32]


def load(path: Path) -> set[str]:
    """The fingerprints in a baseline file; a missing file is an empty baseline."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return set()
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise GateError(f"not a gate baseline: {exc}", where=str(path)) from exc
    if (
        not isinstance(doc, dict)
        or doc.get("version") != VERSION
        or not isinstance(doc.get("findings"), list)
    ):
        raise GateError(
            f"not a gate baseline (expected version {VERSION} and findings: [...])",
            where=str(path),
            hint="write one with gate scan --update-baseline",
        )
    prints = {f.get("fingerprint") for f in doc["findings"] if isinstance(f, dict)}
    return {p for p in prints if isinstance(p, str)}


def save(path: Path, known: list[Known]) -> None:
    doc = {
        "version": VERSION,
        "tool": "gate scan",
        "findings": [
            {"fingerprint": k.fingerprint, "path": k.path, "rule_id": k.rule_id, "line": k.line}
            for k in sorted(known, key=lambda k: (k.path, k.line))
        ],
    }
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
