"""Questions put to a person: what one request's ask findings look like, and the pending set.

A question holds only what a person may see (kinds, rules, masked previews, keyed
fingerprints), never a value, so it can be listed, sent to the page and written to the
dataset as it is.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from gate.ask.choices import ANSWERS, Choice, Scope
from gate.screen.verdict import Withheld, Withholding

__all__ = ["ANSWERS", "DEFAULT_SCOPE", "SCOPES", "WITHDRAWN", "Answer", "By", "Choice", "Scope"]

WITHDRAWN = Choice.WITHDRAWN
SCOPES = tuple(Scope)
# An answer holds for the rest of its conversation unless the person says otherwise: agents
# resend the whole history every turn, and content the provider already has is not worth
# asking about again ("once": this request only).
DEFAULT_SCOPE = Scope.SESSION
# A question no request waits on: a rule file changed while gate runs so as to loosen the
# rules (gate/ask/loosen.py); approve lets the change take effect, block keeps the rules.
LOOSEN_RULE = "loosen-rule"
LOOSEN_ANSWERS = (Choice.APPROVE, Choice.BLOCK)
_ANSWERED_KEPT = 256  # recently answered ids, so a late second answer gets 409, not 404


class By(StrEnum):
    """Who answered: written to the dataset and the audit; never rename."""

    PERSON = "person"
    MEMORY = "memory"
    TIMEOUT = "timeout"
    POLICY = "policy"
    HELPER = "helper"
    AGENT = "agent"  # the agent went away while waiting: the question was withdrawn
    REVOKED = "revoked"  # its user was revoked while it waited: withdrawn, the request blocked


@dataclass(frozen=True, slots=True)
class Answer:
    answer: Choice
    by: By
    remember: Scope = Scope.ONCE
    at: float = field(default_factory=time.time)


@dataclass(kw_only=True)
class Question:
    """One request's ask findings, as shown to a person."""

    id: str
    kind: str  # send-secret | send-denied-content | loosen-rule
    default: Choice  # redact | block: what applies when nobody answers
    # agent, upstream, path, model, run_id, project_root; a loosen-rule question, which no
    # request waits on: file, layer, project_root
    request: dict[str, Any]
    findings: list[dict[str, Any]]
    keys: tuple[str, ...]  # the findings' Asked keys (what an approval lets through)
    timeout: float | None  # None: open until answered (nothing waits on it)
    created: float = field(default_factory=time.time)
    proposed: Choice | None = None  # a decision helper's proposal, if one is configured
    answers: tuple[Choice, ...] = ANSWERS  # the answers it takes
    once: bool = False  # answered for this question only, never remembered

    @property
    def expires(self) -> float | None:
        return None if self.timeout is None else self.created + self.timeout

    def to_json(self) -> dict[str, Any]:
        out = {
            "id": self.id,
            "kind": self.kind,
            "created": self.created,
            "expires": self.expires,
            "default": self.default,
            "request": self.request,
            "findings": self.findings,
        }
        if self.proposed:
            out["proposed"] = self.proposed
        if self.answers != ANSWERS:
            out["answers"] = list(self.answers)
        return out

    def record(self, answer: Answer) -> dict[str, Any]:
        """The dataset line for this question once answered."""
        return {
            **self.to_json(),
            "answer": answer.answer,
            "remember": answer.remember,
            "by": str(answer.by),
            "answered_at": answer.at,
        }


def finding_kind(w: Withheld) -> str:
    """A secret's detector kind (github-token, ...), or tool-result for an ask rule's."""
    return (w.detector or "secret") if w.kind is Withholding.SECRET else "tool-result"


def finding(w: Withheld) -> dict[str, Any]:
    """One ask finding as a person sees it (masked preview and context only)."""
    assert w.asked is not None
    return {
        "kind": finding_kind(w),
        "rule": w.rule,
        "where": w.where,
        "file": w.file,
        "tool": w.tool,
        "preview": w.asked.preview,
        "context": w.asked.context,
        "fingerprint": w.asked.key[:16],
    }


def question_kind(asks: list[Withheld]) -> str:
    """One question per request: a secret among the findings makes it a send-secret one."""
    kinds = {w.asked.question for w in asks if w.asked}
    return "send-secret" if "send-secret" in kinds or not kinds else kinds.pop()


class Pending:
    """The questions waiting for an answer. Changed from the proxy's event loop only (the
    control API is served on the same loop), so no lock is needed; new_id only reads, and a
    worker thread settling a WebSocket frame's question at once calls it too."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[Question, asyncio.Future[Answer]]] = {}
        self._answered: OrderedDict[str, Answer] = OrderedDict()

    def new_id(self) -> str:
        while True:
            qid = "q" + secrets.token_hex(3)
            if qid not in self._open and qid not in self._answered:
                return qid

    def add(self, question: Question) -> asyncio.Future[Answer]:
        fut: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
        self._open[question.id] = (question, fut)
        return fut

    def get(self, qid: str) -> Question | None:
        hit = self._open.get(qid)
        return hit[0] if hit else None

    def questions(self) -> list[Question]:
        return sorted((q for q, _ in self._open.values()), key=lambda q: q.created)

    def answer(self, qid: str, answer: Answer) -> None:
        """Raises KeyError for an unknown id, ValueError when already answered."""
        if qid in self._answered:
            raise ValueError(
                f"question {qid} was already answered"
                f" ({self._answered[qid].answer}, by {self._answered[qid].by})"
            )
        _, fut = self._open[qid]
        if not fut.done():
            fut.set_result(answer)
        self.close(qid, answer)

    def close(self, qid: str, answer: Answer) -> None:
        """The question is settled (answered, timed out, or its request went away)."""
        self._open.pop(qid, None)
        self._answered[qid] = answer
        while len(self._answered) > _ANSWERED_KEPT:
            self._answered.popitem(last=False)
