"""One paragraph about one run, for `gate run` to print when its agent exits."""

from __future__ import annotations

import json
from collections import Counter
from typing import TYPE_CHECKING

from gate.audit.report import approved, shown_verdict
from gate.audit.tables import size

if TYPE_CHECKING:
    from gate.audit.store import AuditStore


def of_run(store: AuditStore, run_id: str) -> str:
    rows = (
        store.conn()
        .execute(
            "SELECT verdict, status, error, request_bytes, withheld, upstream FROM requests"
            " WHERE run_id = ? ORDER BY id",
            (run_id,),
        )
        .fetchall()
    )
    if not rows:
        return f"gate: this run sent no request through gate (run {run_id})."
    verdicts: Counter[str] = Counter()
    held: Counter[str] = Counter()
    answers: Counter[str] = Counter()
    questions: set[str] = set()
    sent = 0
    upstreams: set[str] = set()
    for verdict, status, error, nbytes, withheld, upstream in rows:
        shown = shown_verdict({"verdict": verdict, "status": status, "error": error})
        verdicts[shown] += 1
        upstreams.add(upstream)
        if shown not in ("blocked", "failed", "withdrawn"):
            sent += nbytes
        for entry in json.loads(withheld or "[]"):
            decision = entry.get("decision") or {}
            qid = decision.get("id")
            if qid and decision.get("by") == "person" and qid not in questions:
                questions.add(qid)
                answers[str(decision.get("answer"))] += 1
            if not approved(decision):
                held[f"{entry.get('kind')} ({entry.get('rule')})"] += 1
    parts = [
        f"gate: this run made {len(rows)} request(s) to {', '.join(sorted(upstreams))}"
        f" ({', '.join(f'{n} {v}' for v, n in sorted(verdicts.items()))});"
        f" {size(sent)} sent."
    ]
    if held:
        parts.append(
            "Withheld: "
            + ", ".join(f"{what}" + (f" ×{n}" if n > 1 else "") for what, n in held.most_common(5))
            + (" and more" if len(held) > 5 else "")
            + " (counted per request: agents resend"
            " their history)."
        )
    else:
        parts.append("Nothing was withheld.")
    if questions:
        parts.append(
            f"You answered {len(questions)} question(s): "
            + ", ".join(f"{n} {a}" for a, n in sorted(answers.items()))
            + "."
        )
    parts.append(f"Details: gate log --run {run_id}")
    return " ".join(parts)
