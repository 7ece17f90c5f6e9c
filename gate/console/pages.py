"""The console's pages, rendered from the audit: live requests, sessions turn by turn,
search, and the report. Every audit string is escaped; secrets are masked."""

from __future__ import annotations

import datetime as dt
import re
from html import escape
from typing import Any
from urllib.parse import quote

from gate.ask.page import ask_in_words
from gate.ask.questions import Question
from gate.audit import conversations, search
from gate.audit.report import approved, shown_verdict
from gate.audit.store import AuditStore
from gate.audit.tables import size
from gate.audit.turns import turns
from gate.screen.secrets import Scanner

ROOT = "/_gate/console"
SCRIPT_PATH = f"{ROOT}/console.js"
LIVE_PATH = f"{ROOT}/live"
PLACEHOLDER = re.compile(r"\[gate: [^\]]*\]")
_NAV = (("", "Live"), ("/sessions", "Sessions"), ("/search", "Search"), ("/report", "Report"))
_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222}
nav a{margin-right:1.2em;font-weight:bold}nav{margin-bottom:1em}
table{border-collapse:collapse;width:100%}td,th{padding:.2em .5em;text-align:left;
vertical-align:top;border-bottom:1px solid #eee}
.v-forwarded{color:#1f7a3a}.v-modified{color:#b7791f}.v-blocked,.v-failed{color:#b42318}
.v-withdrawn{color:#7a1fa2}
.turn{border:1px solid #bbb;border-radius:6px;margin:1em 0;padding:.5em 1em}
.item{white-space:pre-wrap;font-family:monospace;margin:.3em 0;padding:.3em;
background:#f7f7f7}.item.new{background:#eef6ee;border-left:4px solid #1f7a3a}
.role{font-weight:bold;color:#245}mark{background:#ffe08a;font-weight:bold}
.old{color:#777;font-style:italic}.pending{background:#fff4e5;padding:.5em}
"""


def nav() -> str:
    links = "".join(f'<a href="{ROOT}{p}">{n}</a>' for p, n in _NAV)
    return f'<nav>{links}<a href="/_gate/ui">Questions</a></nav>'


def report_page(report_html: str) -> str:
    """`gate report --html`'s page, with the console's links above it."""
    style = "<style>nav a{margin-right:1.2em;font-weight:bold}nav{margin:1em 2em}</style>"
    return report_html.replace("<body>", f"<body>{style}{nav()}", 1)


def page(title: str, body: str, live: bool = False) -> str:
    script = f'<script src="{SCRIPT_PATH}" defer></script>' if live else ""
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{script}'
        f"<title>gate: {escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"{nav()}<h1>{escape(title)}</h1>"
        f"{body}</body></html>"
    )


def when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M:%S")


# -- live requests ----------------------------------------------------------------------


PAGE_ROWS = 30  # requests per page of the list


def live(
    store: AuditStore,
    pending: list[Question],
    before: int | None = None,
    after: int | None = None,
    limit: int = PAGE_ROWS,
) -> dict[str, str]:
    """The parts the live page's script replaces: the questions waiting (each in plain
    words, answered on the approval page), the table's rows and the links to the pages
    around them. Newest first; `before`/`after`: the page below/above that id."""
    found = list(store.rows(limit, body=False, before=before, after=after))
    rows = "".join(_request_row(r) for r in found)
    n = len(pending)
    note = (
        f'<a href="/_gate/ui">{n} question{"s" if n != 1 else ""} waiting for an answer</a>'
        + "".join(f"<br>{escape(q.id)}: {escape(ask_in_words(q))}" for q in pending)
        if pending
        else "No question is waiting."
    )
    return {
        "pending": note,
        "rows": rows or "<tr><td colspan=9>No requests here.</td></tr>",
        "pager": _pager(store, [r["id"] for r in found], newest=before is None and after is None),
    }


def _pager(store: AuditStore, ids: list[int], newest: bool) -> str:
    """Links to the newer and older pages of the list, and how much the audit holds."""
    total, top, bottom = (
        store.conn().execute("SELECT COUNT(*), MAX(id), MIN(id) FROM requests").fetchone()
    )
    if not ids:
        return f'<a href="{ROOT}">newest requests</a>' if total else ""
    hi, lo = max(ids), min(ids)
    links = [f"requests {lo} to {hi} of {total}"]
    if not newest:
        links.append(f'<a href="{ROOT}">newest (live)</a>')
    if hi < top:
        links.append(f'<a rel="prev" href="{ROOT}?after={hi}">← newer</a>')
    if lo > bottom:
        links.append(f'<a rel="next" href="{ROOT}?before={lo}">older →</a>')
    return " · ".join(links)


def live_page(
    store: AuditStore, pending: list[Question], before: int | None = None, after: int | None = None
) -> str:
    """The list of requests: the newest page keeps itself current, an older page stays as
    it is (rows arriving would push what the person is reading off it)."""
    parts = live(store, pending, before, after)
    newest = before is None and after is None
    return page(
        "Live requests" if newest else "Requests",
        (
            f'<p class="pending" id="pending">{parts["pending"]}</p>'
            f'<p class="pager" id="pager">{parts["pager"]}</p>'
            "<table><thead><tr><th>ID</th><th>When</th><th>Agent</th><th>Verdict</th>"
            "<th>Status</th><th>Where</th><th>Model</th><th>Size</th><th>Withheld</th></tr>"
            f'</thead><tbody id="requests">{parts["rows"]}</tbody></table>'
        ),
        live=newest,
    )


def _request_row(r: dict[str, Any]) -> str:
    kept = [w for w in r["withheld"] if not approved(w.get("decision"))]
    sent = len(r["withheld"]) - len(kept)
    held = (f"withheld {len(kept)}" if kept else "") + (f" approved {sent}" if sent else "")
    shown = shown_verdict(r)
    session = r.get("session")
    link = f' <a href="{ROOT}/session?id={quote(session)}">session</a>' if session else ""
    return (
        f'<tr id="r{r["id"]}"><td><a href="{ROOT}/request?id={r["id"]}">{r["id"]}</a></td>'
        f"<td>{when(r['ts'])}</td>"
        f"<td>{escape(r['agent'] or '-')}</td>"
        f'<td class="v-{escape(shown)}">{escape(shown)}</td>'
        f"<td>{r['status'] or '-'}</td>"
        f"<td>{escape(r['upstream'] + r['path'].split('?')[0])}</td>"
        f"<td>{escape(r['model'] or '-')}</td><td>{size(r['request_bytes'])}</td>"
        f"<td>{escape(held.strip())}{link}</td></tr>"
    )


# -- sessions ---------------------------------------------------------------------------


SESSIONS_PER_PAGE = 50


def sessions_page(store: AuditStore, scanner: Scanner, number: int = 1) -> str:
    """Page `number` of the conversations, the most recent first."""
    offset = (number - 1) * SESSIONS_PER_PAGE
    # One more than a page: whether there is an older page.
    found = conversations.listed(store, None, SESSIONS_PER_PAGE + 1, offset)
    more, found = len(found) > SESSIONS_PER_PAGE, found[:SESSIONS_PER_PAGE]
    rows = "".join(
        f'<tr><td><a href="{ROOT}/session?id={quote(c.session)}">{escape(c.session[:16])}</a>'
        f"</td><td>{when(c.last_ts)}</td><td>{escape(c.agent or '-')}</td>"
        f"<td>{escape(c.project or '-')}</td><td>{c.requests}</td>"
        f"<td>{c.withheld}{f' +{c.blocked} blocked' if c.blocked else ''}</td>"
        f"<td>{escape(mask(c.first_prompt, scanner))}</td></tr>"
        for c in found
    )
    links = [
        f'<a rel="prev" href="{ROOT}/sessions?page={number - 1}">← newer</a>' if number > 1 else "",
        f"page {number}",
        f'<a rel="next" href="{ROOT}/sessions?page={number + 1}">older →</a>' if more else "",
    ]
    pager = f'<p class="pager">{" · ".join(x for x in links if x)}</p>'
    if not found:
        return page("Sessions", "<p>No conversations recorded yet.</p>" if number == 1 else pager)
    return page(
        "Sessions",
        pager
        + "<table><tr><th>Session</th><th>Last</th><th>Agent</th><th>Project</th><th>Turns</th>"
        f"<th>Withheld</th><th>First prompt</th></tr>{rows}</table>"
        + (pager if more or number > 1 else ""),
    )


def session_page(store: AuditStore, session: str, scanner: Scanner) -> str | None:
    """One conversation turn by turn as the provider received it: each turn shows what it
    added (its diff to the turn before), gate's placeholders highlighted; None: unknown."""
    try:
        ids = conversations.requests_of(store, session)
    except ValueError:
        return None
    if not ids:
        return None
    out = []
    for n, t in enumerate(turns(store, ids), 1):
        row = t["row"]
        shown = shown_verdict(row)
        old = t["new_from"]
        head = (
            f'<h2>Turn {n} · <a href="{ROOT}/request?id={row["id"]}">request {row["id"]}</a> ·'
            f" {when(row['ts'])} ·"
            f' {escape(row["model"] or "-")} · <span class="v-{escape(shown)}">'
            f"{escape(shown)}</span></h2>"
        )
        if row["verdict"] == "blocked":
            head += f"<p>Blocked, not sent: {escape(row.get('reason') or '')}</p>"
        items = "".join(_item(i, scanner) for i in t["items"][old:])
        if old:
            items = (
                f'<p class="old">{old} earlier item{"s" if old != 1 else ""}, unchanged'
                " from the turn before (sent again)</p>" + items
            )
        if old and not t["items"][old:]:
            items += '<p class="old">(nothing new)</p>'
        out.append(f'<div class="turn" id="turn{n}">{head}{items}</div>')
    return page(f"Session {session[:16]}", "".join(out))


def _item(item: conversations.Item, scanner: Scanner) -> str:
    text = escape(mask(item.text, scanner))
    text = PLACEHOLDER.sub(lambda m: f"<mark>{m[0]}</mark>", text)
    return f'<div class="item new"><span class="role">+ {escape(item.role)}:</span> {text}</div>'


def mask(text: str, scanner: Scanner) -> str:
    """Secrets a person approved were sent as they are; on screen only kind and length."""
    out, at = [], 0
    for f in scanner.scan(text):
        out += [text[at : f.start], f"[{f.kind}: {f.end - f.start} chars masked]"]
        at = f.end
    return "".join([*out, text[at:]])


# -- search -----------------------------------------------------------------------------


def search_page(store: AuditStore, text: str, scanner: Scanner) -> str:
    form = (
        f'<form method="get" action="{ROOT}/search"><input name="q" size="50"'
        f' value="{escape(text)}" autofocus> <button>Search what was sent</button></form>'
    )
    if not text.strip():
        return page("Search", form)
    try:
        found = search.text_search(store, text, None, 50)
    except ValueError as exc:
        return page("Search", form + f"<p>{escape(str(exc))}</p>")
    rows = []
    for f in found:
        first = store.get(f.requests[0], body=False) or {}
        rows.append(
            f'<tr><td><a href="{ROOT}/request?id={f.requests[0]}">{f.requests[0]}</a></td>'
            f"<td>{when(first.get('ts') or 0)}</td>"
            f"<td>{escape(first.get('agent') or '-')}</td><td>{len(f.requests)}</td>"
            f"<td><code>{escape(mask(f.snippet, scanner))}</code></td></tr>"
        )
    table = (
        "<table><tr><th>First request</th><th>When</th><th>Agent</th><th>Requests</th>"
        f"<th>Snippet</th></tr>{''.join(rows)}</table>"
        if rows
        else f"<p>Nothing sent holds {escape(text)!s}.</p>"
    )
    return page("Search", form + table)


# The live page's script: every 2 s, replaces the pending line, the pager and the table's
# rows (the page itself stays: no reload, the scroll position kept). Only the newest page
# loads it.
SCRIPT = """"use strict";
(() => {
  async function refresh() {
    try {
      const reply = await fetch("LIVE", {credentials: "same-origin", cache: "no-store"});
      if (!reply.ok) return;
      const parts = await reply.json();
      document.getElementById("pending").innerHTML = parts.pending;
      document.getElementById("pager").innerHTML = parts.pager;
      const rows = document.getElementById("requests");
      if (rows.innerHTML !== parts.rows) rows.innerHTML = parts.rows;
    } catch (e) { /* the gate stopped: keep what is shown */ }
  }
  setInterval(refresh, 2000);
})();
""".replace("LIVE", LIVE_PATH)
