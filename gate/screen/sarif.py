"""SARIF 2.1.0 for code-scanning UIs (GitHub, GitLab, VS Code): findings, never values."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gate import __version__
from gate.screen.detectors import Detector, Tier

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def document(results: Sequence[dict[str, Any]], detectors: Sequence[Detector]) -> dict[str, Any]:
    """`results` are gate scan records (path, line, col, end_line, end_col, rule_id, kind,
    tier, fingerprint); every detector is listed as a rule so ids resolve to docs."""
    rules = [
        {
            "id": d.id,
            "name": d.kind,
            "shortDescription": {"text": f"{d.kind} ({d.tier} tier)"},
            "helpUri": d.docs,
            "defaultConfiguration": {"level": _level(d.tier)},
            "properties": {"tier": str(d.tier), "kind": d.kind},
        }
        for d in detectors
    ]
    index = {d.id: i for i, d in enumerate(detectors)}
    out = []
    for r in results:
        out.append(
            {
                "ruleId": r["rule_id"],
                "ruleIndex": index.get(r["rule_id"], -1),
                "level": _level(Tier(r["tier"])),
                "message": {
                    "text": f"Likely {r['kind']} ({r['tier']} tier); the value is not shown."
                },
                "locations": [
                    {
                        "physicalLocation": {
                            "artifactLocation": {"uri": r["path"]},
                            "region": {
                                "startLine": r["line"],
                                "startColumn": r["col"],
                                "endLine": r["end_line"],
                                "endColumn": r["end_col"],
                            },
                        }
                    }
                ],
                "partialFingerprints": {"gateSecret/v1": r["fingerprint"]},
            }
        )
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "gate", "version": __version__, "rules": rules}},
                "results": out,
            }
        ],
    }


def _level(tier: Tier) -> str:
    return "error" if tier is Tier.HIGH else "warning"
