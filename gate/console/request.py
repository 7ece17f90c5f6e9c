"""The console's page for one request, as `gate show --body` prints it: what it was, what
was withheld and why, and the body sent, secrets masked."""

from __future__ import annotations

import json
from html import escape
from typing import Any
from urllib.parse import quote

from gate.audit.report import approved, shown_verdict
from gate.audit.store import AuditStore
from gate.audit.tables import size
from gate.console.pages import PLACEHOLDER, ROOT, mask, page, when
from gate.screen.secrets import Scanner

PATH = f"{ROOT}/request"
# A body is shown up to this many bytes: past it, the page says where to read it whole.
SHOWN_BYTES = 512 << 10
# The fields shown first, in this order, with their labels; the rest follow as they are.
_FIELDS = (
    ("ts", "When"),
    ("agent", "Agent"),
    ("user_name", "User"),
    ("model", "Model"),
    ("upstream", "Upstream"),
    ("method", "Method"),
    ("path", "Path"),
    ("status", "Status"),
    ("latency_ms", "Latency"),
    ("request_bytes", "Size"),
    ("input_tokens", "Input tokens"),
    ("output_tokens", "Output tokens"),
    ("cache_read_tokens", "Cache read tokens"),
    ("cache_creation_tokens", "Cache write tokens"),
    ("host", "Host"),
    ("project_root", "Project"),
    ("run_id", "Run"),
    ("session", "Session"),
    ("reason", "Why blocked"),
    ("error", "Error"),
)
_HIDDEN = {"id", "verdict", "withheld", "body", "record_hash"}


def link(row_id: int) -> str:
    return f'<a href="{PATH}?id={row_id}">{row_id}</a>'


def request_page(store: AuditStore, arg: str, scanner: Scanner) -> str | None:
    """The page of request `arg` (None: no such request)."""
    try:
        row_id = int(arg)
    except ValueError:
        return None
    row = store.get(row_id, body=False)
    if row is None:
        return None
    shown = shown_verdict(row)
    body = store.body_of(row_id)
    sections = [
        _pager(store, row_id),
        f'<p>Verdict: <b class="v-{escape(shown)}">{escape(shown)}</b></p>',
        _facts(row),
        _withheld(row["withheld"]),
        _body(row_id, body, scanner),
    ]
    return page(f"Request {row_id}", "".join(sections))


def _pager(store: AuditStore, row_id: int) -> str:
    db = store.conn()
    before = db.execute("SELECT MAX(id) FROM requests WHERE id < ?", (row_id,)).fetchone()[0]
    after = db.execute("SELECT MIN(id) FROM requests WHERE id > ?", (row_id,)).fetchone()[0]
    links = [
        f'<a rel="prev" href="{PATH}?id={before}">← request {before}</a>' if before else "",
        f'<a href="{ROOT}?before={row_id + 1}">in the list</a>',
        f'<a rel="next" href="{PATH}?id={after}">request {after} →</a>' if after else "",
    ]
    return f'<p class="pager">{" · ".join(x for x in links if x)}</p>'


def _facts(row: dict[str, Any]) -> str:
    known = {key for key, _ in _FIELDS}
    fields = [*_FIELDS, *((k, k) for k in row if k not in known and k not in _HIDDEN)]
    out = []
    for key, label in fields:
        value = row.get(key)
        if value in (None, "", []):
            continue
        out.append(f"<tr><th>{escape(label)}</th><td>{_readable(key, value)}</td></tr>")
    return f'<table class="facts">{"".join(out)}</table>'


def _readable(key: str, value: Any) -> str:
    if key == "ts":
        return escape(when(float(value)))
    if key == "latency_ms" and isinstance(value, int | float):
        return f"{value:.0f} ms" if value < 1000 else f"{value / 1000:.2f} s"
    if key.endswith("_bytes") and isinstance(value, int):
        return escape(size(value))
    if key == "session":
        return f'<a href="{ROOT}/session?id={quote(str(value))}">{escape(str(value))}</a>'
    return escape(str(value))


def _withheld(entries: list[dict[str, Any]]) -> str:
    if not entries:
        return "<p>Nothing was withheld: it left as the agent sent it.</p>"
    rows = "".join(
        "<tr>"
        f"<td>{'approved, sent' if approved(e.get('decision')) else 'withheld'}</td>"
        f"<td>{escape(str(e.get('kind') or ''))}</td><td>{escape(str(e.get('rule') or ''))}</td>"
        f"<td>{escape(str(e.get('tool') or ''))}</td>"
        f"<td>{escape(str(e.get('target') or ''))}</td>"
        f"<td>{escape(_decision(e.get('decision')))}</td></tr>"
        for e in entries
    )
    return (
        "<h2>What gate did</h2><table><tr><th></th><th>Kind</th><th>Rule</th><th>Tool</th>"
        f"<th>Target</th><th>Answer</th></tr>{rows}</table>"
    )


def _decision(decision: Any) -> str:
    if not isinstance(decision, dict):
        return ""
    answer, by, question = (str(decision.get(k) or "") for k in ("answer", "by", "question"))
    return f"{answer} by {by}" + (f" (question {question})" if question else "")


def _body(row_id: int, body: bytes | None, scanner: Scanner) -> str:
    if body is None:
        return "<h2>Body</h2><p>No body was recorded for this request.</p>"
    note = ""
    if len(body) > SHOWN_BYTES:
        note = (
            f'<p class="old">The first {size(SHOWN_BYTES)} of {size(len(body))}:'
            f" <code>gate show --raw {row_id}</code> prints it whole.</p>"
        )
        body = body[:SHOWN_BYTES]
    text = _pretty(body.decode("utf-8", "replace"))
    shown = PLACEHOLDER.sub(lambda m: f"<mark>{m[0]}</mark>", escape(mask(text, scanner)))
    return f'<h2>Body sent</h2>{note}<pre class="item" id="body">{shown}</pre>'


def _pretty(text: str) -> str:
    """JSON indented to be read; anything else (or JSON cut short) as it was sent."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text
