"""What `gate watch` shows: one frame built from a snapshot, and the selection it keeps.

Pure functions of plain data, so a frame is tested without a terminal. Previews and
context are the masked ones the control API serves; a value is never shown.
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from typing import Any

from gate.audit.report import approved, shown_verdict

SCOPE_KEYS = {"s": "session", "p": "project", "w": "always"}
KEYS_HELP = (
    "up/down select  a approve  r redact  b block  A/R/B +remember"
    " (s session, p project, w always)  q quit"
)
CONTEXT_LINES = 3
# What an agent sent (paths, models, file context) must not drive the terminal: control
# characters are shown in caret notation, bidi overrides as "?".
_SAFE = (
    {c: f"^{chr(c + 64)}" for c in range(32)}
    | {0x7F: "^?", 9: " "}
    | {c: "?" for c in range(0x80, 0xA0)}
    | {c: "?" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}
)
_SGR = {
    "title": "1",
    "selected": "7",
    "dim": "2",
    "blocked": "31",
    "modified": "33",
    "forwarded": "32",
    "note": "33",
    "failed": "31",
}


@dataclass(frozen=True, slots=True)
class Snapshot:
    requests: list[dict[str, Any]]  # audit metadata, newest first
    pending: list[dict[str, Any]]  # questions, oldest first
    note: str | None  # why there are no questions to show (no gate running)


@dataclass
class View:
    """The selected question (by id, so it survives a refresh), a pending A/R/B waiting
    for its scope key, and the last action's message."""

    data_dir: str
    selected: str | None = None
    choosing: str | None = None
    message: str = ""

    def follow(self, pending: list[dict[str, Any]]) -> None:
        """Keep the selection on a question that is still open, else the oldest."""
        ids = [q["id"] for q in pending]
        if self.selected not in ids:
            self.selected = ids[0] if ids else None

    def move(self, pending: list[dict[str, Any]], step: int) -> None:
        ids = [q["id"] for q in pending]
        if ids:
            at = ids.index(self.selected) if self.selected in ids else 0
            self.selected = ids[max(0, min(len(ids) - 1, at + step))]

    def selected_in(self, pending: list[dict[str, Any]]) -> str | None:
        return self.selected if any(q["id"] == self.selected for q in pending) else None


def render(snap: Snapshot, view: View, *, width: int | None, color: bool) -> list[str]:
    """The frame's lines, cut to `width` (None: whole lines), with ANSI styles if `color`."""
    lines: list[tuple[str, str]] = [(f"gate watch  {view.data_dir}", "title"), (KEYS_HELP, "dim")]
    if view.message:
        lines.append((view.message, "note"))
    lines += [("", ""), (f"PENDING QUESTIONS ({len(snap.pending)})", "title")]
    if snap.note:
        lines.append((f"  {snap.note}", "note"))
    elif not snap.pending:
        lines.append(("  none", "dim"))
    for q in snap.pending:
        lines += _question(q, selected=q["id"] == view.selected)
    lines += [
        ("", ""),
        ("RECENT REQUESTS", "title"),
        (
            f"{'ID':>6}  {'TIME':<8}  {'VERDICT':<9}  {'ST':>3}  {'AGENT':<12}  "
            f"{'UPSTREAM/PATH':<32}  {'MODEL':<20}  {'SIZE':>8}  WITHHELD  APPROVED",
            "dim",
        ),
    ]
    if not snap.requests:
        lines.append(("  no requests recorded yet", "dim"))
    lines += [(_request(r), shown_verdict(r)) for r in snap.requests]
    return [
        _style(_cut(text.translate(_SAFE), width), style if color else "") for text, style in lines
    ]


def _cut(text: str, width: int | None) -> str:
    return text if width is None else text[:width]


def _question(q: dict[str, Any], *, selected: bool) -> list[tuple[str, str]]:
    req = q.get("request") or {}
    left = max(0, int((q.get("expires") or 0) - time.time()))
    proposed = f"  helper proposes {q['proposed']}" if q.get("proposed") else ""
    head = (
        f"{'>' if selected else ' '} {q['id']}  {q.get('kind', '?')}  "
        f"{req.get('agent') or '-'}  {req.get('upstream') or '-'}"
        f"{(req.get('path') or '').split('?')[0]}  {req.get('model') or '-'}  "
        f"{q.get('default', 'block')} in {left}s{proposed}"
    )
    if q.get("expires") is None:  # no request waits on it (a loosen-rule question)
        head = (
            f"{'>' if selected else ' '} {q['id']}  {q.get('kind', '?')}  "
            f"{req.get('file') or '-'} changed while gate runs: its rules are held until"
            " answered (a lets the change take effect, b keeps the rules)"
        )
    out = [(head, "selected" if selected else "")]
    for f in q.get("findings") or []:
        where = " ".join(str(f[k]) for k in ("where", "tool", "file") if f.get(k))
        out.append(
            (
                f"      {f.get('kind')}  {f.get('preview') or ''}  {where}"
                f"  rule {f.get('rule') or '-'}",
                "",
            )
        )
        for line in str(f.get("context") or "").splitlines()[:CONTEXT_LINES]:
            out.append((f"        | {line}", "dim"))
    return out


def _request(r: dict[str, Any]) -> str:
    when = dt.datetime.fromtimestamp(r["ts"]).strftime("%H:%M:%S") if r.get("ts") else "-"
    entries = r.get("withheld") or []
    let = sum(approved(w.get("decision")) for w in entries)  # approved: sent, not withheld
    where = f"{r.get('upstream') or '-'}{(r.get('path') or '').split('?')[0]}"
    return (
        f"{r.get('id', ''):>6}  {when:<8}  {shown_verdict(r):<9}  "
        f"{r.get('status') or '-':>3}  {(r.get('agent') or '-')[:12]:<12}  {where[:32]:<32}  "
        f"{(r.get('model') or '-')[:20]:<20}  {r.get('request_bytes') or 0:>7}B  "
        f"{(len(entries) - let) or '':>8}  {let or ''}"
    ).rstrip()


def _style(text: str, style: str) -> str:
    sgr = _SGR.get(style)
    return f"\x1b[{sgr}m{text}\x1b[0m" if sgr else text
