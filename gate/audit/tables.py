"""The report's sections as tables of display strings, shared by the text and HTML output
so both always show the same rows."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from gate.audit.report import Report, Traffic

# Control characters (ANSI escapes among them) in an agent-chosen string could rewrite the
# user's terminal; they are shown as escapes instead.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
NONE = "(none)"  # a missing value: no agent header, no model in the body


@dataclass(frozen=True, slots=True, kw_only=True)
class Table:
    title: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    numeric: tuple[int, ...]  # the columns that hold numbers (right-aligned)
    empty: str  # said instead of an empty table


def clean(text: str | None) -> str:
    if text is None or text == "":
        return NONE
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", text)


def size(n: int) -> str:
    """Bytes as a person reads them: 1000-based, three significant figures or so."""
    value = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            if unit == "B":
                return f"{n} B"
            return f"{value:.0f} {unit}" if value >= 100 else f"{value:.1f} {unit}"
        value /= 1000
    raise AssertionError("unreachable")


def count(n: int) -> str:
    return f"{n:,}"


def when(ts: float | None) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M") if ts is not None else NONE


def period(report: Report) -> str:
    start = f"since {when(report.since)}" if report.since is not None else "all time"
    return f"{start}; generated {when(report.generated)} (local time)"


def summary(report: Report) -> str:
    t = report.totals
    if report.empty:
        return (
            "no requests recorded in this period"
            if report.since is not None
            else "no requests recorded yet: point an agent at gate (gate run -- claude)"
        )
    verdicts = ", ".join(f"{n} {clean(v)}" for v, n in report.verdicts.items())
    plural = "" if t.requests == 1 else "s"
    return (
        f"{count(t.requests)} request{plural} ({verdicts}) from {when(report.first_ts)} to"
        f" {when(report.last_ts)}; {size(t.bytes_sent)} sent; {count(t.input_tokens)}"
        f" input and {count(t.output_tokens)} output tokens"
    )


def _traffic(title: str, key: str, rows: tuple[Traffic, ...]) -> Table:
    return Table(
        title=title,
        columns=(key, "requests", "blocked", "sent", "input tokens", "output tokens"),
        rows=tuple(
            (
                clean(t.key),
                count(t.requests),
                count(t.blocked),
                size(t.bytes_sent),
                count(t.input_tokens),
                count(t.output_tokens),
            )
            for t in rows
        ),
        numeric=(1, 2, 3, 4, 5),
        empty="no requests",
    )


def tables(report: Report) -> list[Table]:
    return [
        _traffic("Per day", "day", report.by_day),
        _traffic("Per host", "host", report.by_host),
        _traffic("Per agent", "agent", report.by_agent),
        _traffic("Per model", "model", report.by_model),
        Table(
            title="Withheld and redacted, by kind and rule",
            columns=("kind", "rule", "items", "occurrences", "requests", "approved"),
            rows=tuple(
                (
                    clean(w.kind),
                    clean(w.rule),
                    count(w.items),
                    count(w.occurrences),
                    count(w.requests),
                    count(w.approved),
                )
                for w in report.withheld
            ),
            numeric=(2, 3, 4, 5),
            empty="nothing was withheld or redacted",
        ),
        Table(
            title="Blocked requests, by reason",
            columns=("requests", "reason"),
            rows=tuple((count(b.requests), clean(b.reason)) for b in report.blocked),
            numeric=(0,),
            empty="no request was blocked",
        ),
        Table(
            title="Questions asked and answers",
            columns=("question", "answer", "answered by", "questions", "items"),
            rows=tuple(
                (
                    clean(a.question),
                    clean(a.answer),
                    clean(a.by),
                    count(a.questions),
                    count(a.items),
                )
                for a in report.questions
            ),
            numeric=(3, 4),
            empty="no questions were asked",
        ),
    ]


def text(report: Report) -> str:
    """The whole report as aligned plain-text tables."""
    out = [f"gate report: {period(report)}", summary(report)]
    if report.empty:
        return "\n".join(out) + "\n"
    for table in tables(report):
        out += ["", table.title]
        if not table.rows:
            out.append(f"  {table.empty}")
            continue
        widths = [
            max(len(r[i]) for r in (table.columns, *table.rows)) for i in range(len(table.columns))
        ]
        for row in (table.columns, *table.rows):
            cells = [
                cell.rjust(w) if i in table.numeric else cell.ljust(w)
                for i, (cell, w) in enumerate(zip(row, widths, strict=True))
            ]
            out.append("  " + "  ".join(cells).rstrip())
    return "\n".join(out) + "\n"
