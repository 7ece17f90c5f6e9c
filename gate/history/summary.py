"""Findings grouped by secret, most urgent to rotate first, as text and as JSON."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gate.history.model import Finding
from gate.history.sent import Gate, Seen

_SEEN_RANK = {Seen.SENT: 0, Seen.UNKNOWN: 1, Seen.NOT_SEEN: 1, Seen.WITHHELD: 2}
_TIER_RANK = {"high": 0, "denied": 1, "low": 2}


@dataclass(frozen=True, slots=True, kw_only=True)
class Group:
    """Every copy of one value (by keyed hash) across every store."""

    digest: str
    kind: str
    tier: str
    preview: str
    gate: Gate
    source: str | None
    findings: tuple[Finding, ...]

    @property
    def agents(self) -> list[str]:
        return sorted({str(f.agent) for f in self.findings})


def group(findings: Iterable[Finding], gates: dict[str, Gate]) -> list[Group]:
    """Rotate these first: values that left through gate, then those gate never saw (an
    agent sent them some other way, or before gate), then those gate withheld; within
    each, high tier and denied-file values before generic ones, the most copies first."""
    by: dict[str, list[Finding]] = {}
    for f in findings:
        by.setdefault(f.digest, []).append(f)
    out = []
    for digest, fs in by.items():
        lead = min(fs, key=lambda f: _TIER_RANK.get(f.tier, 3))
        fs.sort(key=lambda f: (f.where.ts or 0.0, str(f.store), f.where.at))
        out.append(
            Group(
                digest=digest,
                kind=lead.kind,
                tier=lead.tier,
                preview=lead.preview,
                gate=gates.get(digest, Gate(Seen.NOT_SEEN)),
                source=next((f.source for f in fs if f.source), None),
                findings=tuple(fs),
            )
        )
    out.sort(
        key=lambda g: (
            _SEEN_RANK[g.gate.seen],
            _TIER_RANK.get(g.tier, 3),
            -len(g.findings),
            g.digest,
        )
    )
    return out


def stamp(ts: float | None) -> str:
    return (
        dt.datetime.fromtimestamp(ts, dt.UTC).strftime("%Y-%m-%d %H:%M") if ts is not None else "-"
    )


def text(groups: list[Group], stores: int) -> list[str]:
    copies = sum(len(g.findings) for g in groups)
    if not groups:
        return [f"no secrets found in {stores} stores"]
    lines = [
        f"{len(groups)} secrets, {copies} copies, in {stores} stores scanned. Rotate these first:",
        "",
    ]
    for n, g in enumerate(groups, 1):
        kind = f"{g.kind} from {g.source}" if g.source else g.kind
        lines.append(
            f"{n}. {kind} {g.preview} ({g.tier}) — {len(g.findings)} copies,"
            f" {', '.join(g.agents)} — {g.gate}"
        )
        for f in g.findings:
            w = f.where
            place = f"{w.place}" + (f" ({w.tool})" if w.tool else "")
            session = (w.session or "-")[:12] + (f" “{w.title[:40]}”" if w.title else "")
            lines.append(
                f"   {stamp(w.ts)}  {f.agent:<11} {place:<24} session {session}"
                f"  project {w.project or '-'}"
            )
            lines.append(f"      {f.store}: {w.at}")
        lines.append("")
    return lines


def to_json(groups: list[Group], stores: int, errors: list[str]) -> dict[str, Any]:
    return {
        "stores": stores,
        "secrets": len(groups),
        "copies": sum(len(g.findings) for g in groups),
        "errors": errors,
        "groups": [
            {
                "fingerprint": g.digest[:16],
                "kind": g.kind,
                "tier": g.tier,
                "preview": g.preview,
                "source": g.source,
                "gate": str(g.gate.seen),
                "gate_ts": g.gate.ts,
                "gate_text": str(g.gate),
                "agents": g.agents,
                "findings": [
                    {
                        "agent": str(f.agent),
                        "store": str(f.store),
                        "at": f.where.at,
                        "place": str(f.where.place),
                        "tool": f.where.tool,
                        "session": f.where.session,
                        "title": f.where.title,
                        "project": f.where.project,
                        "ts": f.where.ts,
                        "rule": f.rule,
                        "kind": f.kind,
                        "tier": f.tier,
                    }
                    for f in g.findings
                ],
            }
            for g in groups
        ],
    }
