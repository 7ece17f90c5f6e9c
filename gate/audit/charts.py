"""Inline SVG charts drawn in Python, so the HTML report needs no script, font or network.

Every string placed in a chart passes through `esc`: labels are model names, hosts and
rule texts, which an agent or a request chooses.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

W, H = 720, 260  # viewBox of the day charts
LEFT, RIGHT, TOP, BOTTOM = 84, 16, 16, 44  # room for "1,000,000"
LABEL_CHARS = 26  # longer labels are cut; the full text is in <title>
Fmt = Callable[[int], str]


def esc(text: object) -> str:
    return escape(str(text), quote=True)


def _nice_max(value: int) -> int:
    """The axis top: the smallest round number (10, 12, 15, 20, 25, 30, 40, 50, 60, 80 times
    a power of ten) at or above `value`, so the chart fills most of its height."""
    if value <= 4:
        return 4
    power: int = max(1, 10 ** (len(str(value)) - 2))
    return next(
        m * power for m in (10, 12, 15, 20, 25, 30, 40, 50, 60, 80, 100) if m * power >= value
    )


def _svg(chart_id: str, title: str, desc: str, width: int, height: int, body: list[str]) -> str:
    return (
        f'<svg id="{esc(chart_id)}" class="chart" viewBox="0 0 {width} {height}"'
        f' role="img" aria-labelledby="{esc(chart_id)}-t {esc(chart_id)}-d">'
        f'<title id="{esc(chart_id)}-t">{esc(title)}</title>'
        f'<desc id="{esc(chart_id)}-d">{esc(desc)}</desc>{"".join(body)}</svg>'
    )


def _frame(top: int, fmt: Fmt, labels: Sequence[str]) -> list[str]:
    """Gridlines with their values, and every n-th day label so they never overlap."""
    plot_h = H - TOP - BOTTOM
    out = []
    for i in range(5):
        y = TOP + plot_h - plot_h * i / 4
        out.append(
            f'<line class="grid" x1="{LEFT}" x2="{W - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
            f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
            f"{esc(fmt(round(top * i / 4)))}</text>"
        )
    step = max(1, math.ceil(len(labels) / 10))
    slot = (W - LEFT - RIGHT) / max(1, len(labels))
    for i, label in enumerate(labels):
        if i % step == 0:
            x = LEFT + slot * (i + 0.5)
            out.append(
                f'<text class="xlabel" x="{x:.1f}" y="{H - BOTTOM + 18}"'
                f' text-anchor="middle">{esc(label[5:] if len(label) == 10 else label)}'
                "</text>"
            )
    return out


def columns(
    chart_id: str, title: str, labels: Sequence[str], values: Sequence[int], fmt: Fmt
) -> str:
    """One vertical bar per label (days), with the value over each bar when they fit."""
    top = _nice_max(max(values, default=0))
    plot_h = H - TOP - BOTTOM
    slot = (W - LEFT - RIGHT) / max(1, len(labels))
    body = _frame(top, fmt, labels)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        h = plot_h * value / top
        x, y = LEFT + slot * i + slot * 0.15, TOP + plot_h - h
        body.append(
            f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{slot * 0.7:.1f}"'
            f' height="{h:.1f}" data-label="{esc(label)}" data-value="{value}">'
            f"<title>{esc(label)}: {esc(fmt(value))}</title></rect>"
        )
        if len(labels) <= 14 and value:
            body.append(
                f'<text class="value" x="{x + slot * 0.35:.1f}" y="{y - 4:.1f}"'
                f' text-anchor="middle">{esc(fmt(value))}</text>'
            )
    desc = "; ".join(f"{label}: {fmt(v)}" for label, v in zip(labels, values, strict=True))
    return _svg(chart_id, title, desc, W, H, body)


def lines(
    chart_id: str,
    title: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[int]]],
    fmt: Fmt,
) -> str:
    """One line with a point per label for each series (input and output tokens)."""
    top = _nice_max(max((v for _, values in series for v in values), default=0))
    plot_h = H - TOP - BOTTOM
    slot = (W - LEFT - RIGHT) / max(1, len(labels))
    body = _frame(top, fmt, labels)
    for n, (name, values) in enumerate(series):
        points = [
            (LEFT + slot * (i + 0.5), TOP + plot_h - plot_h * v / top) for i, v in enumerate(values)
        ]
        body.append(
            f'<polyline class="line s{n}" points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            + '"/>'
        )
        for (x, y), label, value in zip(points, labels, values, strict=True):
            body.append(
                f'<circle class="point s{n}" cx="{x:.1f}" cy="{y:.1f}" r="3.5"'
                f' data-series="{esc(name)}" data-label="{esc(label)}"'
                f' data-value="{value}"><title>{esc(label)} {esc(name)}:'
                f" {esc(fmt(value))}</title></circle>"
            )
        body.append(
            f'<rect class="key s{n}" x="{LEFT + 130 * n}" y="{H - 16}" width="12"'
            f' height="12"/><text class="legend" x="{LEFT + 130 * n + 18}"'
            f' y="{H - 6}">{esc(name)}</text>'
        )
    desc = "; ".join(
        f"{name}: "
        + ", ".join(f"{label} {fmt(v)}" for label, v in zip(labels, values, strict=True))
        for name, values in series
    )
    return _svg(chart_id, title, desc, W, H, body)


def rows(chart_id: str, title: str, labels: Sequence[str], values: Sequence[int], fmt: Fmt) -> str:
    """One horizontal bar per label (agents, hosts, models, kinds), the value at its end."""
    row_h, label_w, value_w, width = 28, 190, 64, 460
    top = max(max(values, default=0), 1)
    body = []
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = 8 + row_h * i
        shown = label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
        w = (width - label_w - value_w) * value / top
        body.append(
            f'<text class="rlabel" x="{label_w - 8}" y="{y + 16}" text-anchor="end">'
            f"<title>{esc(label)}</title>{esc(shown)}</text>"
            f'<rect class="bar" x="{label_w}" y="{y + 3}" width="{w:.1f}" height="16"'
            f' data-label="{esc(label)}" data-value="{value}">'
            f"<title>{esc(label)}: {esc(fmt(value))}</title></rect>"
            f'<text class="value" x="{label_w + w + 6:.1f}" y="{y + 16}">'
            f"{esc(fmt(value))}</text>"
        )
    desc = "; ".join(f"{label}: {fmt(v)}" for label, v in zip(labels, values, strict=True))
    return _svg(chart_id, title, desc, width, 16 + row_h * max(1, len(labels)), body)
