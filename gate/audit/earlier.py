"""Whether a question's values already left in an earlier request of the same conversation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gate.audit.report import approved, shown_verdict
from gate.audit.store import AuditStore

_LOOK_BACK = 1000  # requests of one conversation read, newest first


@dataclass(frozen=True, slots=True)
class Earlier:
    request: int  # the first request of the conversation that sent it
    ts: float


def sent_before(
    store: AuditStore, session: str | None, findings: list[dict[str, Any]]
) -> dict[int, Earlier]:
    """For each finding (by its index) the first earlier request of `session` that sent
    the same value: a secret by its keyed fingerprint, a file's content by its path, let
    through by a person's or memory's approval. Findings sent nowhere before are absent."""
    if not session:
        return {}
    out: dict[int, Earlier] = {}
    for row in store.rows(_LOOK_BACK, session=session, body=False):  # newest first
        if shown_verdict(row) not in ("forwarded", "modified"):
            continue  # blocked, withdrawn, or never reached the provider
        for entry in row["withheld"]:
            if not approved(entry.get("decision")):
                continue
            for i, f in enumerate(findings):
                if _same(entry, f):
                    out[i] = Earlier(row["id"], row["ts"])  # an older one replaces it
    return out


def _same(entry: dict[str, Any], finding: dict[str, Any]) -> bool:
    if entry.get("kind") == "secret":
        return bool(entry.get("fingerprint")) and entry.get("fingerprint") == finding.get(
            "fingerprint"
        )
    return bool(finding.get("file")) and entry.get("target") == finding.get("file")
