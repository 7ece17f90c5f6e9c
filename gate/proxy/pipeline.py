"""What an HTTP request and a WebSocket frame share on their way out: the threads that screen
and record them off the event loop, and the audit rows and questions made of them."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from loguru import logger

from gate import runs
from gate.audit.records import Attribution, Disposition, RequestRow
from gate.audit.store import AuditStore
from gate.proxy import routing
from gate.screen.disclose import Scrub
from gate.screen.request import Verdict

T = TypeVar("T")

UNCHECKED = "gate could not check the reason for this block"

# A few threads, not one per flow: under the GIL screening does not run in parallel anyway.
# What the threads buy is an event loop that stays free to relay every other agent's stream
# (and to read their next requests) while one large body is screened and recorded.
THREADS = 4
# Screening a small body costs less than handing it to a thread and back: the hop, and the
# loop then waiting for the GIL a busy worker holds, made ordinary turns cost 30% more CPU
# and 60% more time under load (bench/latency.py --concurrent --rounds 2: 15.6 -> 10.9 ms
# of CPU a request, 49 -> 74 req/s). So a body under this many bytes, sent as is (no
# content-coding: a small compressed body can inflate to megabytes), is screened on the
# loop; a larger one on a thread. The audit write always runs on a thread: it can wait
# for SQLite's lock, which another connection (the background pass, say) may hold.
SCREEN_ON_LOOP_BELOW = 256 * 1024


class Offload:
    """The gate's own worker threads (named gate-screen-N), apart from asyncio's default
    executor, so a burst of large bodies cannot queue the ask flow's file writes behind it.
    Each thread keeps its own audit connection (AuditStore.conn), at most THREADS of them."""

    def __init__(self, threads: int = THREADS) -> None:
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="gate-screen")

    async def run(self, fn: Callable[..., T], *args: Any, small: bool = False) -> T:
        """fn(*args) on a worker thread, or right here when the caller says it is `small`
        work (see SCREEN_ON_LOOP_BELOW); what it raises is raised here."""
        if small:
            return fn(*args)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(fn, *args))

    def close(self) -> None:
        # Not waited for: a worker still writing fails against the closed audit, and its
        # request is blocked (fail closed).
        self._pool.shutdown(wait=False, cancel_futures=True)


@dataclass(frozen=True, slots=True, kw_only=True)
class Origin:
    """Who sent a request (or a frame) and where it goes: what its audit row and its
    question say about it."""

    route: routing.Route
    run: runs.Run | None
    agent: str | None
    session: str | None  # the conversation, which an answer's default scope covers
    user: str | None  # who sent it, on a shared gate: only they see its question
    method: str


def small(body: bytes, coded: bool) -> bool:
    """Whether screening `body` is cheaper on the loop than on a thread."""
    return not coded and len(body) < SCREEN_ON_LOOP_BELOW


def question_info(origin: Origin, verdict: Verdict) -> dict[str, Any]:
    """What a question says about its request."""
    return {
        "agent": origin.agent,
        "upstream": origin.route.upstream.name,
        "path": routing.safe_path(origin.route.path),
        "model": verdict.model,
        "run_id": origin.run.id if origin.run else None,
        "session": origin.session,
        "project_root": verdict.project_root,
        "user": origin.user,
    }


def record_sent(
    audit: AuditStore,
    scrub: Scrub,
    origin: Origin,
    verdict: Verdict,
    sent: bytes,
    *,
    modified: bool,
    coding: str | None = None,
) -> int:
    """The row of what leaves, written before it leaves; raises (AuditError) when it
    cannot be, and the request or frame is then refused."""
    route = origin.route
    row = RequestRow(
        run_id=origin.run.id if origin.run else None,
        agent=origin.agent,
        upstream=route.upstream.name,
        session=origin.session,
        user_name=origin.user,
        host=route.upstream.host,
        method=origin.method,
        path=scrub.path(routing.safe_path(route.path)),
        model=scrub.value(verdict.model),
        project_root=verdict.project_root,
        request_bytes=len(sent),
        verdict=(
            Disposition.MODIFIED
            if modified
            else Disposition.UNSCREENED
            if verdict.format == "unscreened"
            else Disposition.FORWARDED
        ),
        withheld=[scrubbed(w.record(), scrub) for w in verdict.withheld],
        body=sent,
        content_encoding=coding,
    )
    return audit.record_request(row)


@dataclass(frozen=True, slots=True, kw_only=True)
class Refusal:
    """What a refused request's (or frame's) audit row says, read on the loop."""

    name: str
    host: str
    path: str
    method: str
    size: int
    who: Attribution | None  # None: refused before gate knew who sent it
    user: str | None
    body: bytes | None


def record_refusal(
    audit: AuditStore,
    scrubber: Callable[[], Scrub],
    refusal: Refusal,
    status: int,
    message: str,
    withheld: tuple[dict[str, object], ...],
) -> str:
    """Record a refused request or frame (`blocked`); the reason as the agent is told it,
    the generic one when it cannot be checked for findings. Never raises for the audit:
    the request is refused either way."""
    try:  # nothing the client sent is written down in clear when it held a finding
        scrub: Scrub | None = scrubber()
        assert scrub is not None
        message, stored = scrub.text(message), scrub.path(routing.safe_path(refusal.path))
        records = [scrubbed(dict(w), scrub) for w in withheld]
    except Exception as exc:
        logger.error("block reason not checked ({})", type(exc).__name__)
        scrub, records = None, []
        message, stored = UNCHECKED, "?"
    try:
        row = _refused_row(
            refusal,
            attribution(refusal.who, refusal.user, refusal.body, scrub),
            path=stored,
            verdict=Disposition.BLOCKED,
            reason=message,
            status=status,
            withheld=records,
        )
        audit.record_request(row)
    except Exception as exc:  # the request is blocked either way
        logger.error("audit write failed for a blocked flow: {}", type(exc).__name__)
    return message


def record_withdrawn(audit: AuditStore, scrubber: Callable[[], Scrub], refusal: Refusal) -> None:
    """Record a request whose agent went away while its question waited (`withdrawn`)."""
    scrub = scrubber()
    row = _refused_row(
        refusal,
        attribution(refusal.who, refusal.user, refusal.body, scrub),
        path=scrub.path(routing.safe_path(refusal.path)),
        verdict=Disposition.WITHDRAWN,
        reason="the agent disconnected while gate was asking; nothing was sent",
    )
    audit.record_request(row)


def _refused_row(
    refusal: Refusal,
    who: Attribution,
    *,
    path: str,
    verdict: Disposition,
    reason: str,
    status: int | None = None,
    withheld: Sequence[Mapping[str, object]] = (),
) -> RequestRow:
    return RequestRow(
        upstream=refusal.name or "?",
        host=refusal.host,
        method=refusal.method,
        path=path,
        request_bytes=refusal.size,
        verdict=verdict,
        reason=reason,
        status=status,
        withheld=withheld,
        run_id=who.run_id,
        agent=who.agent,
        project_root=who.project_root,
        session=who.session,
        user_name=who.user_name,
        model=who.model,
    )


def scrubbed(record: dict[str, object], scrub: Scrub) -> dict[str, object]:
    """A withheld item as recorded: a call id or tool name that held a finding is withheld."""
    for key in ("call_id", "tool"):
        if isinstance(value := record.get(key), str):
            record[key] = scrub.value(value)
    return record


def attribution(
    who: Attribution | None, user: str | None, body: bytes | None, scrub: Scrub | None
) -> Attribution:
    """The agent, run, project, session and model of a request gate refused: the same
    attribution a sent request's row carries. The model is read from the decoded body when
    screening stopped before it did (a body gate could not screen may not be JSON); a
    model name that holds a finding is not written down (none when it cannot be checked)."""
    if who is None and user is None:
        return Attribution()
    who = who or Attribution()
    if user is not None:  # refused before gate_who was made: who sent it still counts
        who = replace(who, user_name=user)
    model = who.model
    if model is None:
        # Never decoded again: a body gate could not decode (too large, say) has no model.
        try:
            parsed = json.loads(body or b"")
        except ValueError:
            parsed = None
        named = parsed.get("model") if isinstance(parsed, dict) else None
        model = named[:200] if isinstance(named, str) else None
    return replace(who, model=scrub.value(model) if scrub is not None else None)


def of_origin(origin: Origin) -> Attribution:
    """A refused frame's attribution, as gate_who holds a request's."""
    return Attribution(
        run_id=origin.run.id if origin.run else None,
        agent=origin.agent,
        project_root=origin.run.root if origin.run else None,
        session=origin.session,
        user_name=origin.user,
    )
