"""The approval page: pending questions, masked previews, one button per answer.

Server-rendered; one script of gate's own (ask/live.py; the CSP allows no other) adds new
questions, drops answered ones and sends answers in place, so nothing moves under the
cursor; without it, the page reloads itself every few seconds and answers are plain form
posts. Everything shown is escaped; nothing on it is a value gate withheld.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from html import escape

from gate.ask import loosen
from gate.ask.live import SCRIPT_PATH
from gate.ask.questions import LOOSEN_RULE, Question

REFRESH_SECONDS = 5
# (value, label, what it means, style, access key): an answer without a scope holds for
# the rest of this conversation (DEFAULT_SCOPE); the keys are gate watch's a, r, b.
_CHOICES = (
    (
        "approve:session",
        "Approve",
        "send it now and in this conversation's later turns",
        "approve",
        "a",
    ),
    ("approve:once", "Approve this request only", "ask again on the next turn", "approve", ""),
    ("approve:project", "Approve for this project", "remembered for this project", "approve", ""),
    ("approve:always", "Always approve", "remembered everywhere", "approve", ""),
    (
        "approve:team",
        "Approve for the team",
        "every gate of the team, in this repository",
        "approve",
        "",
    ),
    ("redact", "Send redacted", "a placeholder goes instead, for this conversation", "redact", "r"),
    ("block", "Block", "refuse the whole request, for this conversation", "block", "b"),
)
# A loosen-rule question's: it is answered once (never remembered).
_LOOSEN_CHOICES = (
    ("approve:once", "Let the change take effect", "enforce the file as it is now", "approve", "a"),
    ("block:once", "Keep the rules in force", "until the file changes again", "block", "b"),
)
_AGENTS = {
    "claude-code": "Claude Code",
    "codex": "Codex",
    "opencode": "OpenCode",
    "gemini-cli": "Gemini CLI",
    "copilot": "Copilot CLI",
    "aider": "Aider",
}
_PROVIDERS = {
    "anthropic": "Anthropic",
    "openai": "OpenAI",
    "gemini": "Google",
    "code-assist": "Google",
    "copilot": "GitHub Copilot",
    "bedrock": "AWS Bedrock",
}
_STYLE = """
body{font:15px/1.4 system-ui,sans-serif;margin:2em auto;max-width:60em;color:#222}
.q{border:1px solid #bbb;border-radius:6px;padding:1em;margin:1em 0}
pre{background:#f4f4f4;padding:.5em;overflow-x:auto;white-space:pre-wrap}
table{border-collapse:collapse}td,th{padding:.2em .6em;text-align:left;vertical-align:top}
button{margin:.2em;padding:.4em .8em;border-radius:4px;border:1px solid #888;cursor:pointer}
button small{display:block;font-size:75%;opacity:.85}
button.approve{background:#1f7a3a;color:#fff}button.redact{background:#b7791f;color:#fff}
button.block{background:#b42318;color:#fff}.note{background:#eef6ee;padding:.5em}
.note.bad,.error{background:#fdecea;color:#8a1c12;padding:.5em}.sending{opacity:.6}
.ask{font-size:120%}kbd{border:1px solid #999;border-radius:3px;padding:0 .3em}
.earlier{margin:.2em 0;font-size:90%}.earlier.sent{color:#b42318;font-weight:bold}
"""


# What each finding's value did earlier in this conversation: finding index → (request
# id, time); absent: not sent before (audit.earlier.sent_before).
Earlier = dict[int, tuple[int, float]]


def render(
    questions: list[Question],
    csrf: str,
    note: str = "",
    earlier: dict[str, Earlier] | None = None,
    user: str | None = None,
    team: bool = False,
) -> str:
    """The page; `user`: who is signed in to a shared gate (they see their questions only,
    or all of them as an admin); `team`: a team store holds answers for every gate of the
    team (the page offers to approve for it)."""
    earlier = earlier or {}
    body = [
        f'<p class="who">Signed in as <b>{escape(user)}</b>.</p>' if user else "",
        # The status line: the last answer, or why it was not taken (the script fills it).
        f'<p id="note" class="note" role="status"{"" if note else " hidden"}>{escape(note)}</p>',
        '<p id="empty"' + (" hidden" if questions else "") + ">No pending questions.</p>",
        '<div id="questions">',
        *(fragment(q, csrf, earlier.get(q.id, {}), team) for q in questions),
        "</div>",
    ]
    return _doc("gate: pending questions", "".join(body), refresh=True)


def fragment(q: Question, csrf: str, earlier: Earlier, team: bool = False) -> str:
    """One question's card, as the page shows it and its script adds it."""
    return _question(q, csrf, earlier, team)


# What an answer's scope holds for, in the status line's words.
_SCOPE_WORDS = {
    "once": "this request only",
    "session": "this conversation",
    "project": "this project",
    "always": "everywhere",
    "team": "the team, in this repository",
}


def answered(qid: str, answer: str, remember: str, kind: str | None = None) -> str:
    """The status line after an answer: "q-3: approve, for this conversation"."""
    if kind == LOOSEN_RULE:
        then = "the change takes effect" if answer == "approve" else "the rules stay in force"
        return f"{qid}: {answer}, {then}"
    return f"{qid}: {answer}, for {_SCOPE_WORDS.get(remember, remember)}"


def unauthorised() -> str:
    return _doc(
        "gate",
        "<p>Not signed in. Open the page with the URL <code>gate serve</code>"
        " printed (or run <code>gate pending</code>, which prints it).</p>",
    )


def message(text: str) -> str:
    return _doc("gate", f"<p>{escape(text)}</p>")


def _question(q: Question, csrf: str, earlier: Earlier, team: bool) -> str:
    if q.kind == LOOSEN_RULE:
        return _loosen(q, csrf)
    r = q.request
    left = max(0, int((q.expires or 0) - time.time()))
    rows = "".join(
        f"<tr><td>{escape(str(f['kind']))}</td><td>{escape(str(f['rule']))}</td>"
        f"<td>{escape(str(f.get('file') or f.get('tool') or ''))}</td>"
        f"<td><code>{escape(str(f['preview']))}</code></td></tr>"
        f"<tr><td colspan=4>{_sent_before(earlier.get(i), bool(r.get('session')))}"
        f"<pre>{escape(str(f['context']))}</pre></td></tr>"
        for i, f in enumerate(q.findings)
    )
    buttons = _buttons(c for c in _CHOICES if team or not c[0].endswith(":team"))
    proposed = f"<p>Decision helper proposes: <b>{escape(q.proposed)}</b></p>" if q.proposed else ""
    return (
        f'<div class="q" id="{escape(q.id)}"><h2>{escape(q.id)}: {escape(q.kind)}</h2>'
        f'<p class="ask">{escape(ask_in_words(q))}</p>'
        + (
            f'<p class="user">Sent by user <b>{escape(str(r["user"]))}</b></p>'
            if r.get("user")
            else ""
        )
        + f"<p>{escape(str(r.get('agent') or 'an agent'))} → {escape(str(r.get('upstream')))}"
        f" {escape(str(r.get('path')))} (model {escape(str(r.get('model') or '?'))}),"
        f" project {escape(str(r.get('project_root') or '?'))}</p>"
        f"<table><tr><th>kind</th><th>rule</th><th>file or tool</th><th>preview</th></tr>"
        f"{rows}</table>{proposed}"
        f'<p>Nobody answering in <span data-expires="{q.expires or 0:.0f}">{left}</span> s'
        f" applies the default: <b>{escape(q.default)}</b>.</p>"
        f"{_form(q, csrf, buttons)}</div>"
    )


def _loosen(q: Question, csrf: str) -> str:
    """A rule file's change held until a person confirms it: no request, no countdown."""
    rows = "".join(
        f"<tr><td>{escape(str(f['rule']))}</td><td>{escape(str(f['where']))}</td>"
        f"<td>{escape(str(f['preview']))}</td></tr>"
        f"<tr><td colspan=3><pre>{escape(str(f['context']))}</pre></td></tr>"
        for f in q.findings
    )
    return (
        f'<div class="q" id="{escape(q.id)}"><h2>{escape(q.id)}: {escape(q.kind)}</h2>'
        f'<p class="ask">{escape(loosen.in_words(q))}</p>'
        "<p>The agent gate polices may edit this file: until you answer, gate keeps"
        " enforcing the rules below. Nothing waits on this question.</p>"
        f"<table><tr><th>rule</th><th>in force at</th><th>the change</th></tr>{rows}</table>"
        f"{_form(q, csrf, _buttons(_LOOSEN_CHOICES))}</div>"
    )


def _buttons(choices: Iterable[tuple[str, str, str, str, str]]) -> str:
    return "".join(
        f'<button type="submit" name="choice" value="{v}" class="{style}" title="{meaning}"'
        + (f' accesskey="{key}"' if key else "")
        + f">{label}"
        + (f" <kbd>{key}</kbd>" if key else "")
        + f"<small>{meaning}</small></button>"
        for v, label, meaning, style, key in choices
    )


def _form(q: Question, csrf: str, buttons: str) -> str:
    return (
        f'<form method="post" action="/_gate/ui/answer">'
        f'<input type="hidden" name="id" value="{escape(q.id)}">'
        f'<input type="hidden" name="csrf" value="{escape(csrf)}">{buttons}</form>'
    )


def _sent_before(earlier: tuple[int, float] | None, known: bool) -> str:
    """Whether the provider already has this value from this conversation."""
    if not known:
        return '<p class="earlier">gate cannot tell this request\'s conversation.</p>'
    if earlier is None:
        return '<p class="earlier new">Not sent earlier in this conversation.</p>'
    request, ts = earlier
    return (
        f'<p class="earlier sent">Already sent earlier in this conversation: request'
        f" {request}, {_ago(ts)} (the provider has it; refusing it now does not take it"
        " back).</p>"
    )


def _ago(ts: float) -> str:
    span = max(0, int(time.time() - ts))
    return (
        f"{span} s ago"
        if span < 60
        else f"{span // 60} min ago"
        if span < 3600
        else f"{span // 3600} h ago"
    )


def ask_in_words(q: Question) -> str:
    """The question as a person says it: "Claude Code wants to send a github token, from
    Bash, to Anthropic"."""
    if q.kind == LOOSEN_RULE:
        return loosen.in_words(q)
    r = q.request
    agent = _AGENTS.get(str(r.get("agent")), str(r.get("agent") or "An agent"))
    provider = _PROVIDERS.get(str(r.get("upstream")), str(r.get("upstream") or "its provider"))
    what = []
    for f in q.findings:
        if f.get("file"):
            item = f"the content of {f['file']}"
        else:
            item = "a " + str(f.get("kind") or "secret").replace("-", " ")
        if f.get("tool"):
            item += f", from {f['tool']}"
        what.append(item)
    return f"{agent} wants to send {'; '.join(dict.fromkeys(what))}, to {provider}."


def _doc(title: str, body: str, refresh: bool = False) -> str:
    # The script keeps the page current in place; without scripts, it reloads itself.
    live = (
        (
            f'<noscript><meta http-equiv="refresh" content="{REFRESH_SECONDS}"></noscript>'
            f'<script src="{SCRIPT_PATH}" defer></script>'
        )
        if refresh
        else ""
    )
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8">{live}'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head>"
        f"<body><h1>{escape(title)}</h1>{body}</body></html>"
    )
