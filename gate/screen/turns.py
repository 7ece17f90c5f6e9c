"""The next turn of a conversation: only the messages it added are screened.

Agents resend the whole conversation every turn. After screening an Anthropic body, gate
keeps what it worked out, message by message, with where each message ends in the raw
bytes (gate/screen/turn.py). A later body on the same path, under the same rules, denied
files, secret screen, working directory and answers, that starts with the same bytes up to
the end of some message and ends with the same bytes from the messages' closing bracket is
that conversation again: its frame (model, system, tools...) and those messages are what
they were, so their outcomes are reused and only the rest is screened
(gate/screen/next_turn.py).

The verdict is the one screening the whole body gives, byte for byte: findings are
counted in the same order, and a rewritten body is put together from each message's
`orjson.dumps`, which is how a whole body is written too (tests/screen/test_turns.py
checks both paths against each other over random conversations). Anything unusual (a body
that does not parse as orjson parses it, a call answered twice, a finding that blocks, a
decision that changed because a file it named did) goes down the whole-body path, which
says why.
"""

from __future__ import annotations

import threading

from loguru import logger

from gate.rules.layers import PolicyStore
from gate.screen import layout, next_turn, turn
from gate.screen.content import SecretScreen
from gate.screen.fingerprints import IndexStore
from gate.screen.turn import Turn
from gate.screen.verdict import Blocked, Outbound, Verdict
from gate.screen.worked import Worked

MAX_TURNS = 64  # conversations remembered (agents and their subagents side by side)
MAX_BYTES = 256 << 20  # raw bodies and rewritten messages kept, in total


class Turns:
    def __init__(self) -> None:
        self._turns: list[Turn] = []
        self._lock = threading.Lock()

    def screen(
        self,
        req: Outbound,
        policies: PolicyStore,
        indexes: IndexStore | None,
        secrets: SecretScreen | None,
    ) -> Verdict | None:
        """The verdict for a next turn of a conversation kept here; None: screen it whole."""
        key = turn.key_of(req)
        with self._lock:
            candidates = [t for t in reversed(self._turns) if t.key == key]
        # The conversation this body continues shares the most messages with it: agents side
        # by side (or subagents) send the same first messages, so the first kept turn that
        # shares any would be another conversation, and everything after its first message
        # would be screened again.
        best: tuple[Turn, int] | None = None
        for kept in candidates:
            k = kept.shared(req.body)
            if k is not None and (best is None or k > best[1]):
                best = (kept, k)
        if best is not None:
            kept, k = best
            try:
                verdict, nxt = next_turn.step(kept, k, req, policies, indexes, secrets)
            except next_turn.Miss as exc:
                logger.debug("screening the whole body: {}", exc)
                return None
            except Blocked:
                return None  # the whole-body path raises it again, in its own order
            # A body that continues the kept turn (sends most of its messages, all but the
            # last one or two, where a cache mark moves) takes its place; one that parts
            # from it earlier is another conversation (a subagent, another agent with the
            # same start), and both are kept: replacing would make each evict the other's.
            n = len(kept.msgs)
            self._put(nxt, kept if k >= n - 2 and 2 * k > n else None)
            logger.debug(
                "next turn: {} of {} messages reused, {} new", k, len(kept.msgs), len(nxt.msgs) - k
            )
            return verdict
        return None

    def keep(
        self,
        req: Outbound,
        worked: Worked,
        secrets: SecretScreen | None,
        where: layout.Layout | None,
    ) -> Verdict | None:
        """Remember a body screened whole (`where`: its messages in its bytes); its verdict,
        the rewritten body put together as the next turn's will be (None: this body cannot
        be a turn, use worked.verdict())."""
        first = turn.first(req, worked, secrets, where)
        if first is None:
            return None
        out = None
        if worked.rewrite and first.frame is not None:
            out = layout.assemble(first.frame, first.outs)
        self._put(first, None)
        return worked.verdict(out)

    def _put(self, new: Turn, old: Turn | None) -> None:
        with self._lock:
            kept = [t for t in self._turns if t is not old]
            kept.append(new)
            total = sum(t.size for t in kept)
            while len(kept) > MAX_TURNS or (total > MAX_BYTES and len(kept) > 1):
                total -= kept.pop(0).size
            self._turns = kept

    def clear(self) -> None:
        with self._lock:
            self._turns = []
