"""`gate history scan --html`: one self-contained page (inline CSS and SVG, no script,
a CSP that forbids every fetch) with findings charted by agent, kind and day."""

from __future__ import annotations

import datetime as dt
from collections import Counter

from gate import __version__
from gate.audit import charts
from gate.audit.charts import esc
from gate.audit.html import CSP, CSS
from gate.history.summary import Group, stamp

_EXTRA = ".sent{color:var(--b);font-weight:600}.mono{font-family:ui-monospace,monospace}"


def _fmt(n: int) -> str:
    return f"{n:,}"


def _charts(groups: list[Group]) -> str:
    findings = [f for g in groups for f in g.findings]
    agents = Counter(str(f.agent) for f in findings).most_common()
    kinds = Counter(g.kind for g in groups).most_common()
    days = Counter(
        dt.datetime.fromtimestamp(f.where.ts, dt.UTC).strftime("%Y-%m-%d")
        for f in findings
        if f.where.ts is not None
    )
    span = sorted(days)
    out = [
        '<div class="grid2">',
        _figure(
            "Copies by agent",
            charts.rows(
                "chart-agents",
                "Copies by agent",
                [a for a, _ in agents],
                [n for _, n in agents],
                _fmt,
            ),
        ),
        _figure(
            "Secrets by kind",
            charts.rows(
                "chart-kinds", "Secrets by kind", [k for k, _ in kinds], [n for _, n in kinds], _fmt
            ),
        ),
        "</div>",
    ]
    if span:
        out.append(
            _figure(
                "Copies by day",
                charts.columns("chart-days", "Copies by day", span, [days[d] for d in span], _fmt),
            )
        )
    return "".join(out)


def _figure(caption: str, svg: str) -> str:
    return f"<figure><figcaption>{esc(caption)}</figcaption>{svg}</figure>"


def _groups(groups: list[Group]) -> str:
    rows = []
    for n, g in enumerate(groups, 1):
        cls = ' class="sent"' if g.gate.seen == "sent" else ""
        rows.append(
            f'<tr data-fingerprint="{esc(g.digest[:16])}"><td class="n">{n}</td>'
            f"<td>{esc(g.kind)}{esc(' from ' + g.source) if g.source else ''}</td>"
            f'<td class="mono">{esc(g.preview)}</td><td>{esc(g.tier)}</td>'
            f'<td class="n">{len(g.findings)}</td><td>{esc(", ".join(g.agents))}</td>'
            f"<td{cls}>{esc(g.gate)}</td></tr>"
        )
    return (
        '<h2>Rotate these first</h2><table id="secrets"><thead><tr><th class="n">#'
        '</th><th>Kind</th><th>Value</th><th>Tier</th><th class="n">Copies</th>'
        "<th>Agents</th><th>Through gate</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table>"
    )


def _copies(groups: list[Group]) -> str:
    rows = []
    for n, g in enumerate(groups, 1):
        for f in g.findings:
            w = f.where
            rows.append(
                f'<tr><td class="n">{n}</td><td>{esc(stamp(w.ts))}</td><td>{esc(f.agent)}</td>'
                f"<td>{esc(w.place)}{esc(f' ({w.tool})' if w.tool else '')}</td>"
                f"<td>{esc(w.session or '-')}{esc(' “' + w.title + '”' if w.title else '')}"
                f"</td><td>{esc(w.project or '-')}</td>"
                f'<td class="mono">{esc(f.store)}: {esc(w.at)}</td></tr>'
            )
    return (
        '<h2>Every copy</h2><table id="copies"><thead><tr><th class="n">#</th>'
        "<th>When</th><th>Agent</th><th>Where</th><th>Session</th><th>Project</th>"
        "<th>Store</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>"
    )


def render(groups: list[Group], stores: int, generated: float) -> str:
    copies = sum(len(g.findings) for g in groups)
    cards = "".join(
        f"<li><b>{_fmt(v)}</b><span>{esc(k)}</span></li>"
        for k, v in (
            ("stores scanned", stores),
            ("secrets", len(groups)),
            ("copies", copies),
            ("sent via gate", sum(1 for g in groups if g.gate.seen == "sent")),
        )
    )
    body = f'<ul class="cards">{cards}</ul>' + (
        _charts(groups) + _groups(groups) + _copies(groups)
        if groups
        else '<p class="empty">No secrets found.</p>'
    )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>gate history, {esc(stamp(generated))}</title>"
        f"<style>{CSS}{_EXTRA}</style></head><body><main>"
        f'<h1>What your agents kept</h1><p class="muted">Scanned {esc(stamp(generated))}'
        f" UTC</p>{body}<footer>Made by gate {esc(__version__)}. Values are masked; none"
        " is in this page. This page loads nothing from the network.</footer>"
        "</main></body></html>\n"
    )
