"""The HTML report: one self-contained page (inline CSS and SVG, no script) that opens
offline and loads nothing; its Content-Security-Policy forbids scripts and every fetch, so
even a string that escaped escaping could not run or call out."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from gate import __version__
from gate.audit import charts, tables
from gate.audit.charts import esc
from gate.audit.report import Report, Traffic

TOP_N = 12  # rows per "by agent/host/model" chart; the rest are summed as "other"

CSS = """
:root{--fg:#1d2430;--muted:#5a6473;--bg:#fbfbfd;--card:#fff;--line:#e3e6ec;
--a:#2f6db5;--b:#c2571a;--grid:#e9ecf1}
@media (prefers-color-scheme:dark){:root{--fg:#e6e9ef;--muted:#a3acb9;--bg:#14171c;
--card:#1c2027;--line:#2c323c;--a:#6ea8f0;--b:#f0a15e;--grid:#2a3039}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);line-height:1.45;
font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1000px;margin:0 auto;padding:28px 20px 48px}
h1{font-size:1.6rem;margin:0 0 4px}h2{font-size:1.15rem;margin:32px 0 10px}
.muted{color:var(--muted)}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(118px,1fr));gap:10px;
margin:18px 0 6px;padding:0;list-style:none}
.cards li{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 12px}
.cards b{display:block;font-size:1.3rem;font-variant-numeric:tabular-nums;white-space:nowrap}
.cards span{color:var(--muted);font-size:.85rem}
figure{margin:0 0 14px;background:var(--card);border:1px solid var(--line);border-radius:8px;
padding:12px}
figcaption{font-weight:600;margin-bottom:6px}
.grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(420px,1fr));gap:14px}
.grid2 figure{margin:0}
svg.chart{width:100%;height:auto;display:block;font-size:12px}
svg .bar{fill:var(--a)}svg .grid{stroke:var(--grid)}
svg text{fill:var(--fg)}svg .tick,svg .xlabel,svg .legend{fill:var(--muted)}
svg .line{fill:none;stroke-width:2.5}svg .line.s0{stroke:var(--a)}svg .line.s1{stroke:var(--b)}
svg .point.s0,svg .key.s0{fill:var(--a)}svg .point.s1,svg .key.s1{fill:var(--b)}
svg .value{font-variant-numeric:tabular-nums}
table{border-collapse:collapse;width:100%;background:var(--card);border:1px solid var(--line);
border-radius:8px;font-size:.92rem}
th,td{padding:6px 10px;border-bottom:1px solid var(--line);text-align:left;
vertical-align:top;overflow-wrap:anywhere}
th{font-weight:600;color:var(--muted)}td.n,th.n{text-align:right;
font-variant-numeric:tabular-nums;white-space:nowrap}
tbody tr:nth-child(even){background:color-mix(in srgb,var(--line) 35%,transparent)}
footer{margin-top:36px;color:var(--muted);font-size:.85rem}
"""
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'"


def days(rows: Sequence[Traffic]) -> list[Traffic]:
    """Every calendar day from the first to the last with a request, empty days as zeros,
    so a quiet day shows as a gap instead of vanishing from the axis."""
    if not rows:
        return []
    by_key = {t.key: t for t in rows}
    day, last = (dt.date.fromisoformat(rows[i].key or "") for i in (0, -1))
    out = []
    while day <= last:
        key = day.isoformat()
        out.append(by_key.get(key) or Traffic.none(key))
        day += dt.timedelta(days=1)
    return out


def _top(pairs: Sequence[tuple[str, int]]) -> tuple[list[str], list[int]]:
    shown = list(pairs[:TOP_N])
    if rest := pairs[TOP_N:]:
        shown.append((f"other ({len(rest)})", sum(n for _, n in rest)))
    return [label for label, _ in shown], [n for _, n in shown]


def _requests_by(chart_id: str, title: str, rows: Sequence[Traffic]) -> str:
    labels, values = _top([(tables.clean(t.key), t.requests) for t in rows])
    return _figure(title, charts.rows(chart_id, title, labels, values, tables.count))


def _figure(caption: str, svg: str) -> str:
    return f"<figure><figcaption>{esc(caption)}</figcaption>{svg}</figure>"


def _charts(report: Report) -> str:
    span = days(report.by_day)
    labels = [t.key or "" for t in span]
    kinds: dict[str, int] = {}
    for w in report.withheld:
        if w.items:
            kinds[w.kind] = kinds.get(w.kind, 0) + w.items
    out = [
        _figure(
            "Bytes sent per day",
            charts.columns(
                "chart-bytes",
                "Bytes sent per day",
                labels,
                [t.bytes_sent for t in span],
                tables.size,
            ),
        ),
        _figure(
            "Tokens per day",
            charts.lines(
                "chart-tokens",
                "Tokens per day",
                labels,
                [
                    ("input tokens", [t.input_tokens for t in span]),
                    ("output tokens", [t.output_tokens for t in span]),
                ],
                tables.count,
            ),
        ),
        '<div class="grid2">',
        _requests_by("chart-agents", "Requests by agent", report.by_agent),
        _requests_by("chart-hosts", "Requests by host", report.by_host),
        _requests_by("chart-models", "Requests by model", report.by_model),
    ]
    if kinds:
        labels, values = _top(
            sorted(((tables.clean(k), n) for k, n in kinds.items()), key=lambda p: (-p[1], p[0]))
        )
        out.append(
            _figure(
                "Withheld items by kind",
                charts.rows(
                    "chart-withheld", "Withheld items by kind", labels, values, tables.count
                ),
            )
        )
    return "".join([*out, "</div>"])


def _table(table: tables.Table) -> str:
    cls = [' class="n"' if i in table.numeric else "" for i in range(len(table.columns))]
    head = "".join(
        f'<th scope="col"{c}>{esc(name)}</th>' for name, c in zip(table.columns, cls, strict=True)
    )
    if not table.rows:
        return f'<h2>{esc(table.title)}</h2><p class="muted empty">{esc(table.empty)}</p>'
    body = "".join(
        "<tr>"
        + "".join(f"<td{c}>{esc(cell)}</td>" for cell, c in zip(row, cls, strict=True))
        + "</tr>"
        for row in table.rows
    )
    return (
        f"<h2>{esc(table.title)}</h2><table><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table>"
    )


def _cards(report: Report) -> str:
    t = report.totals
    items = [
        (tables.count(t.requests), "requests"),
        (tables.size(t.bytes_sent), "sent"),
        (tables.count(t.input_tokens), "input tokens"),
        (tables.count(t.output_tokens), "output tokens"),
        (tables.count(sum(w.items for w in report.withheld)), "items withheld"),
        (tables.count(sum(w.approved for w in report.withheld)), "approved and sent"),
        (tables.count(t.blocked), "requests blocked"),
        (tables.count(sum(a.questions for a in report.questions)), "questions asked"),
    ]
    return (
        '<ul class="cards">'
        + "".join(
            f"<li><b>{esc(value)}</b><span>{esc(label)}</span></li>" for value, label in items
        )
        + "</ul>"
    )


def render(report: Report) -> str:
    """The whole page. Every audit string goes through esc() (charts do the same)."""
    if report.empty:
        content = f'<p class="empty">{esc(tables.summary(report))}</p>'
    else:
        content = (
            _cards(report)
            + f"<p>{esc(tables.summary(report))}</p>"
            + _charts(report)
            + "".join(_table(t) for t in tables.tables(report))
        )
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>gate report, {esc(tables.when(report.generated))}</title>"
        f"<style>{CSS}</style></head><body><main>"
        f'<h1>gate report</h1><p class="muted">{esc(tables.period(report))}</p>{content}'
        f"<footer>Made by gate {esc(__version__)} from the local audit's metadata; request"
        " bodies are not included. This page loads nothing from the network.</footer>"
        "</main></body></html>\n"
    )
