"""Questions about rule files changed while gate runs so as to loosen the rules.

The agent gate polices may edit its own rule files, so what such an edit loosens stays in
force until a person confirms it: one question per file, open until answered, on no
request (nothing waits on it). Approved, the file's rules as they are now take effect;
blocked, the held rules stay until the file changes again or gate restarts; unanswered,
they stay. It is answered once, never remembered, and like every question only through the
control API, which the agent cannot reach with gate's token.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from loguru import logger

from gate.ask import events, notify
from gate.ask.choices import Choice
from gate.ask.questions import (
    LOOSEN_ANSWERS,
    LOOSEN_RULE,
    WITHDRAWN,
    Answer,
    By,
    Pending,
    Question,
)
from gate.rules.held import Change, LayerKey, Loosening


class Loosenings:
    """One per gate: the open question for each rule file whose change is held."""

    def __init__(self, pending: Pending, confirm: Callable[[Loosening, bool], bool]):
        self.pending = pending
        self._confirm = confirm  # PolicyStore.confirm
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._latest: dict[LayerKey, Loosening | None] = {}  # what each file now holds
        self._open: dict[LayerKey, tuple[Loosening, Question, asyncio.Future[Answer]]] = {}

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Ask on this loop (the one the control API answers on) from now on."""
        with self._lock:
            self._loop = loop
        loop.call_soon_threadsafe(self._sync)

    def changed(self, key: LayerKey, loosening: Loosening | None) -> None:
        """From any thread, never blocking: what a file's change now holds (None: nothing
        to ask about it any more)."""
        with self._lock:
            self._latest[key] = loosening
            loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed: gate is stopping
                loop.call_soon_threadsafe(self._sync)

    def _sync(self) -> None:
        """Make the open questions match what the files hold: a new question for a new
        change, none for one already asked about, the old one withdrawn when the file
        changed again."""
        with self._lock:
            latest = dict(self._latest)
        for key, want in latest.items():
            have = self._open.get(key)
            if have is not None and have[0] == want:
                continue
            if have is not None:
                self._withdraw(key, "the file changed again" if want else "nothing is held now")
            if want is not None:
                self._ask(want)

    def _ask(self, lo: Loosening) -> None:
        q = Question(
            id=self.pending.new_id(),
            kind=LOOSEN_RULE,
            default=Choice.BLOCK,
            request={"file": lo.file, "layer": lo.layer, "project_root": lo.key[2]},
            findings=findings(lo),
            keys=(),
            timeout=None,
            answers=LOOSEN_ANSWERS,
            once=True,
        )
        future = self.pending.add(q)
        self._open[lo.key] = (lo, q, future)
        future.add_done_callback(lambda f: self._answered(lo, q, f))
        _tell(q, lo)

    def _answered(self, lo: Loosening, q: Question, future: asyncio.Future[Answer]) -> None:
        have = self._open.get(lo.key)
        if have is None or have[1] is not q or future.cancelled():
            return  # withdrawn meanwhile
        del self._open[lo.key]
        with self._lock:  # answered: not asked again, whatever else reloads later
            if self._latest.get(lo.key) == lo:
                self._latest[lo.key] = None
        answer = future.result()
        approve = answer.answer == "approve"
        if not self._confirm(lo, approve):
            logger.warning(
                "question {}: {} changed again before the answer; the answer applies to"
                " nothing (gate asks about the new change)",
                q.id,
                lo.file,
            )
        elif approve:
            logger.warning("question {}: approved; {} is enforced as it is now", q.id, lo.file)
        else:
            logger.warning(
                "question {}: blocked; the rules {} would loosen stay in force until it"
                " changes again or gate restarts",
                q.id,
                lo.file,
            )
        events.emit("answered", id=q.id, kind=q.kind, answer=answer.answer, by=str(answer.by))

    def _withdraw(self, key: LayerKey, why: str) -> None:
        _, q, future = self._open.pop(key)
        self.pending.close(q.id, Answer(WITHDRAWN, By.POLICY))
        future.cancel()
        logger.warning("question {}: withdrawn, {}", q.id, why)
        events.emit("withdrawn", id=q.id, kind=q.kind)


def findings(lo: Loosening) -> list[dict[str, Any]]:
    """What the change would loosen, one finding a rule (and one for `secrets:`), shaped
    like a request question's findings so every view lists them."""
    out = [_finding(c) for c in lo.changes]
    if lo.secrets_before:
        out.append(
            {
                "kind": "loosen-secrets",
                "rule": "secrets:",
                "where": lo.file,
                "file": None,
                "tool": None,
                "preview": "secrets: settings loosened",
                "context": "in force: "
                + "; ".join(_table(t) for t in lo.secrets_before)
                + f"\nthe file now: {_table(lo.secrets_now) or '(none)'}",
                "fingerprint": "",
            }
        )
    return out


def _finding(c: Change) -> dict[str, Any]:
    after = {
        "removed": "nothing: the rule is gone from the file, or no longer valid",
        "exception": f"{c.effect}: {c.rule} with a new unless: exception ({c.now_where})",
    }.get(c.becomes, f"{c.becomes}: {c.rule} ({c.now_where})")
    return {
        "kind": LOOSEN_RULE,
        "rule": c.rule,
        "where": c.where,
        "file": None,
        "tool": None,
        "preview": c.says(),
        "context": f"in force: {c.effect}: {c.rule} ({c.where})\nthe file now: {after}",
        "fingerprint": "",
    }


def _table(table: tuple[tuple[str, str], ...]) -> str:
    return ", ".join(f"{key}: {action}" for key, action in table)


def in_words(q: Question) -> str:
    """The question as a person says it."""
    rules = [str(f["rule"]) for f in q.findings if f.get("kind") == LOOSEN_RULE]
    what = [f"{len(rules)} rule(s) ({', '.join(rules)})"] if rules else []
    if any(f.get("kind") == "loosen-secrets" for f in q.findings):
        what.append("its secrets: settings")
    return (
        f"{q.request.get('file')} changed while gate runs and would loosen"
        f" {' and '.join(what) or 'the rules'}: let the change take effect?"
    )


def _tell(q: Question, lo: Loosening) -> None:
    """Where a person is: gate's log, the event stream, the desktop."""
    logger.warning(
        "question {}: {} changed while gate runs and would loosen {}; the rules stay in"
        " force until a person answers: `gate approve {}` lets the change take effect,"
        " `gate block {}` keeps them (or the page, or `gate watch`)",
        q.id,
        lo.file,
        ", ".join(f"{c.rule} ({c.where}: {c.says()})" for c in lo.changes) or "secrets:",
        q.id,
        q.id,
    )
    events.emit("question", **q.to_json())
    notify.desktop(
        f"gate: {lo.file} would loosen the rules",
        f"{in_words(q)} gate approve {q.id} | gate block {q.id}",
    )
