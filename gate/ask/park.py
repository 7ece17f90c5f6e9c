"""Settle a request's ask findings: remembered answers first, then park it and ask a person.

Only the asking request waits (it awaits a future on the proxy's loop); every other
request keeps flowing. Whatever happens, an unanswered finding stays redacted, and an
answer that cannot be applied blocks (fail closed).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from loguru import logger

from gate.ask import events, notify
from gate.ask.choices import Choice
from gate.ask.dataset import Dataset
from gate.ask.helper import check_helper_url, propose
from gate.ask.memory import DecisionMemory
from gate.ask.memory_team import SCOPE as TEAM
from gate.ask.memory_team import TeamMemory
from gate.ask.questions import (
    ANSWERS,
    WITHDRAWN,
    Answer,
    By,
    Pending,
    Question,
    finding,
    finding_kind,
    question_kind,
)
from gate.config import Config
from gate.screen.verdict import Blocked, Verdict, Withheld

# Approving a withheld tool result exposes its content to the secret screen, which may
# then ask again; past this many rounds what is still unanswered stays redacted.
ROUNDS = 3
REVOKE_CHECK_SECONDS = 1.0  # how soon a revoked user's parked request is withdrawn


@dataclass(frozen=True, slots=True)
class Decided:
    """How one ask finding was settled: the audit's `decision`."""

    id: str  # the question id, or the remembered entry's id
    question: str  # the question kind
    answer: Choice
    by: By

    def record(self) -> dict[str, str]:
        return {"id": self.id, "question": self.question, "answer": self.answer, "by": str(self.by)}


class Asker:
    """One per gate: its pending questions, decision memory, dataset and helper."""

    def __init__(
        self,
        config: Config,
        data_dir: Path,
        key: bytes,
        pending: Pending,
        team: TeamMemory | None = None,
    ):
        self.config = config.ask
        self.memory = DecisionMemory(data_dir, key)
        self.team = team  # shared answers (`--remember team`), None without a team key
        self.dataset = Dataset(data_dir, config.decisions.record_dataset)
        url, remote = config.decisions.helper_url, config.decisions.allow_remote
        self.helper = check_helper_url(url, remote) if url else None
        self.pending = pending
        # On a shared gate: whether a user may still send (a parked request of a user
        # revoked while it waits is withdrawn and blocked). None: no users.
        self.still_allowed: Callable[[str], bool] | None = None
        self._told_memory: set[tuple[str, ...]] = set()  # memory answers recorded once

    async def settle(
        self,
        verdict: Verdict,
        request: dict[str, Any],
        rescreen: Callable[[frozenset[str]], Awaitable[Verdict]],
    ) -> Verdict:
        """The verdict to send once every ask finding is answered; Blocked if one says so.
        `rescreen` screens the request again with the approved findings let through (off
        the event loop: the caller runs it on a worker thread)."""
        decided: dict[str, Decided] = {}
        approved: frozenset[str] = frozenset()
        for _ in range(ROUNDS):
            asks = [w for w in verdict.asks if w.asked and w.asked.key not in decided]
            if not asks:
                break
            decided |= await self._decide(asks, request)
            more = frozenset(k for k, d in decided.items() if d.answer == "approve")
            if more != approved:
                approved = more
                verdict = await rescreen(approved)
        return replace(
            verdict, withheld=tuple(_with_decision(w, decided) for w in verdict.withheld)
        )

    def settle_now(self, verdict: Verdict, request: dict[str, Any]) -> Verdict:
        """Where a request cannot wait (a WebSocket frame): the default applies at once."""
        asks = list(verdict.asks)
        if not asks:
            return verdict
        question = self._question(asks, request)
        answer = Answer(Choice(self.config.default), By.POLICY)
        self._record(question, answer)
        decided = {
            w.asked.key: Decided(question.id, question.kind, answer.answer, By.POLICY)
            for w in asks
            if w.asked
        }
        _raise_if_blocked(decided, asks)
        return replace(
            verdict, withheld=tuple(_with_decision(w, decided) for w in verdict.withheld)
        )

    async def _decide(self, asks: list[Withheld], request: dict[str, Any]) -> dict[str, Decided]:
        out: dict[str, Decided] = {}
        rest: list[Withheld] = []
        for w in asks:
            assert w.asked is not None
            hit = self.memory.lookup(
                self._fingerprint(w),
                finding_kind(w),
                session=_conversation(request),
                project=request.get("project_root"),
            )
            if hit is None:
                rest.append(w)
            else:
                out[w.asked.key] = Decided(hit.id, w.asked.question, Choice(hit.answer), By.MEMORY)
        if rest and self.team is not None:  # a database round trip: off the event loop
            out |= await asyncio.to_thread(self._team_answers, rest, request)
            rest = [w for w in rest if w.asked and w.asked.key not in out]
        # File writes (dataset, memory: fsync'd) run off the event loop, which carries every
        # other flow meanwhile.
        if out and not rest and (told := self._memory_answer(out)) is not None:
            await asyncio.to_thread(self._record, self._question(asks, request), told)
        _raise_if_blocked(out, asks)
        if rest:
            question = self._question(rest, request)
            answer = await self._ask(question)
            await asyncio.to_thread(self._record, question, answer)
            if answer.by is By.PERSON:
                await asyncio.to_thread(self._remember, question, rest, answer, request)
            out |= {
                w.asked.key: Decided(question.id, question.kind, answer.answer, answer.by)
                for w in rest
                if w.asked
            }
            _raise_if_blocked(out, asks)
        return out

    def _question(self, asks: list[Withheld], request: dict[str, Any]) -> Question:
        return Question(
            id=self.pending.new_id(),
            kind=question_kind(asks),
            default=Choice(self.config.default),
            request=request,
            findings=[finding(w) for w in asks],
            keys=tuple(w.asked.key for w in asks if w.asked),
            timeout=self.config.timeout_seconds,
        )

    async def _ask(self, q: Question) -> Answer:
        if self.config.mode == "never":
            return Answer(Choice(self.config.default), By.POLICY)  # nobody was asked
        if self.helper:
            proposed = await asyncio.to_thread(propose, self.helper, q.to_json())
            q.proposed = Choice(proposed) if proposed in ANSWERS else None
        answer = Answer(q.proposed, By.HELPER) if q.proposed else Answer(q.default, By.TIMEOUT)
        future = self.pending.add(q)
        _tell(q)
        try:
            answer = await self._wait(q, future, answer)
        except asyncio.CancelledError:
            # The agent went away: withdrawn at once; a later answer is refused (409).
            answer = Answer(WITHDRAWN, By.AGENT)
            logger.warning("question {}: withdrawn, the agent disconnected", q.id)
            events.emit("withdrawn", id=q.id, kind=q.kind)
            self.pending.close(q.id, answer)
            self._record(q, answer)  # no await: the task is being cancelled
            raise
        finally:
            # Also when the agent went away while waiting: the question is closed.
            self.pending.close(q.id, answer)
        events.emit(
            "answered",
            id=q.id,
            kind=q.kind,
            answer=answer.answer,
            remember=answer.remember,
            by=str(answer.by),
        )
        return answer

    async def _wait(self, q: Question, future: asyncio.Future[Answer], default: Answer) -> Answer:
        """The answer, or `default` once the question times out; on a shared gate, checked
        every second: a question whose user was revoked is withdrawn, its request blocked."""
        user = q.request.get("user")
        assert q.timeout is not None  # a request's question always times out
        deadline = time.monotonic() + q.timeout
        while (left := deadline - time.monotonic()) > 0:
            step = min(left, REVOKE_CHECK_SECONDS) if user and self.still_allowed else left
            done, _ = await asyncio.wait({future}, timeout=step)
            if done:
                return future.result()
            if user and self.still_allowed and not self.still_allowed(str(user)):
                logger.warning("question {}: withdrawn, its user was revoked", q.id)
                events.emit("withdrawn", id=q.id, kind=q.kind)
                return Answer(Choice.BLOCK, By.REVOKED)
        logger.warning(
            "question {}: no answer in {:.0f} s, {} applies", q.id, q.timeout, default.answer
        )
        return default

    def _record(self, q: Question, answer: Answer) -> None:
        try:
            self.dataset.append(q.kind, q.record(answer))
        except (OSError, ValueError) as exc:  # the dataset is a record, not a safeguard
            logger.error("question {}: dataset line not written ({})", q.id, type(exc).__name__)

    def _memory_answer(self, decided: dict[str, Decided]) -> Answer | None:
        """Every turn resends the history: a remembered answer is recorded once per gate
        (None: already recorded)."""
        seen = tuple(sorted(decided))
        if seen in self._told_memory:
            return None
        self._told_memory.add(seen)
        answers = {d.answer for d in decided.values()}
        return Answer(answers.pop() if len(answers) == 1 else Choice.REDACT, By.MEMORY)

    def _team_answers(self, asks: list[Withheld], request: dict[str, Any]) -> dict[str, Decided]:
        """Team answers for what no local answer decided (local answers come first)."""
        assert self.team is not None
        keyed = [
            (w, self.team.fingerprint(w.asked.team, finding_kind(w)), finding_kind(w))
            for w in asks
            if w.asked and w.asked.team
        ]
        found = self.team.lookup(
            [(f, k) for _, f, k in keyed], self.team.repo_of(request.get("project_root"))
        )
        out = {}
        for w, f, k in keyed:
            if (e := found.get((f, k))) is not None and w.asked is not None:
                out[w.asked.key] = Decided(e.id, w.asked.question, Choice(e.answer), By.MEMORY)
        return out

    def _remember_team(
        self, q: Question, asks: list[Withheld], answer: str, request: dict[str, Any]
    ) -> None:
        repo = self.team.repo_of(request.get("project_root")) if self.team else None
        if self.team is None or repo is None:
            # Fail closed: not shared, so every gate (this one too) asks again next time.
            logger.warning(
                "decision {} not remembered for the team: {}",
                q.id,
                "this gate has no team key (decisions.team_key_file)"
                if self.team is None
                else "the project has no origin remote",
            )
            return
        for w in asks:
            if w.asked and w.asked.team:
                self.team.remember(
                    self.team.fingerprint(w.asked.team, finding_kind(w)),
                    finding_kind(w),
                    answer,
                    repo=repo,
                    question_id=q.id,
                )

    def _remember(
        self, q: Question, asks: list[Withheld], answer: Answer, request: dict[str, Any]
    ) -> None:
        if answer.remember == TEAM:
            self._remember_team(q, asks, answer.answer, request)
            return
        for w in asks:
            assert w.asked is not None
            self.memory.remember(
                self._fingerprint(w),
                finding_kind(w),
                answer.answer,
                answer.remember,
                session=_conversation(request),
                project=request.get("project_root"),
                question_id=q.id,
            )

    def _fingerprint(self, w: Withheld) -> str:
        # The memory gets the finding's keyed hash, never the value.
        assert w.asked is not None
        return self.memory.fingerprint(w.asked.key, finding_kind(w))


def _conversation(request: dict[str, Any]) -> str | None:
    """What the `session` scope means: this conversation (the audit's session key), else
    the run."""
    return request.get("session") or request.get("run_id")


def _tell(q: Question) -> None:
    """Where a person is: gate's log (stderr for `gate serve`), the event stream, the desktop."""
    what = ", ".join(sorted({f"{f['kind']} ({f['rule']})" for f in q.findings}))
    agent = q.request.get("agent") or "an agent"
    logger.warning(
        "question {}: {} wants to send {}; answer with `gate approve {}`, `gate redact"
        " {}` or `gate block {}` (or the page); {} in {:.0f} s",
        q.id,
        agent,
        what,
        q.id,
        q.id,
        q.id,
        q.default,
        q.timeout,
    )
    events.emit("question", **q.to_json())
    notify.desktop(
        f"gate: {agent} wants to send {q.kind.removeprefix('send-')}",
        f"{what}. gate approve {q.id} | gate redact {q.id} | gate block {q.id}",
    )


def _raise_if_blocked(decided: dict[str, Decided], asks: list[Withheld]) -> None:
    if d := next((d for d in decided.values() if d.answer == "block"), None):
        why = {
            By.PERSON: "the user blocked it",
            By.MEMORY: "a remembered answer blocks it",
            By.TIMEOUT: "nobody answered in time and the default is block",
            By.POLICY: "gate may not ask (ask: never) and the default is block",
            By.HELPER: "the decision helper proposed block and nobody answered",
            By.REVOKED: "its user was revoked while it waited (`gate users revoke`)",
        }[d.by]
        # The audit keeps what was asked and how it was answered, as for a sent request.
        records = tuple(
            _with_decision(w, decided).record() for w in asks if w.asked and w.asked.key in decided
        )
        raise Blocked(f"{why} (question {d.id}, {d.question})", records)


def _with_decision(w: Withheld, decided: dict[str, Decided]) -> Withheld:
    if w.asked is None or w.asked.key not in decided:
        return w
    return replace(w, decision=decided[w.asked.key].record())
