"""Outputs that come back later than their command: each follow-up is tied to the call that
started the command (Claude Code background tasks, Codex's running exec sessions).

Claude Code answers a `Bash` call run in the background (or backgrounded by the user) with
"Command running in background with ID: X. Output is being written to: PATH"; the output
arrives later through `TaskOutput` (`BashOutput` in older versions) naming X, or a `Read`
of PATH. Codex answers a long `exec_command` with "Process running with session ID N" and
the rest of the output comes back through `write_stdin` naming N; in code mode, an `exec`
cell that yields answers "Script running with cell ID C" and the rest comes back through
`wait` naming C. Such a follow-up's result
is the command's output, so it is decided as that command; one whose task gate cannot find
in the request is decided as the strictest command it could be.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from gate.providers.segments import UNSEEN, Role, Segment, ToolCall, Walk

# Follow-up tool → the input keys that name the task (first present wins).
FOLLOW_UPS: Mapping[str, tuple[str, ...]] = {
    "TaskOutput": ("task_id", "agentId", "bash_id", "shell_id"),
    "BashOutput": ("bash_id", "task_id", "shell_id"),
    "AgentOutputTool": ("task_id", "agentId"),
    "BashOutputTool": ("bash_id", "task_id"),
    "write_stdin": ("session_id",),
    "wait": ("cell_id",),  # Codex code mode: a yielded exec cell
}
# Follow-ups that may themselves say the task is still running.
_RESUMING = frozenset({"write_stdin", "wait"})
_STARTED = re.compile(
    r"(?:Command running in background|Command was manually backgrounded by user)"
    r" with ID: (?P<id>[^\s.]+)\.?(?: Output is being written to: (?P<path>\S+?)\.?(?:\s|$))?"
)
_SESSION = re.compile(r"Process running with session ID (?P<id>\d+)")
_CELL = re.compile(r"Script running with cell ID (?P<id>[^\s.,;]+)")
UNKNOWN_TASK = "a background task gate did not see start"


class Quiet:
    """Tool outputs known to say nothing of a task started, so that the history an agent
    resends is not searched again every turn; one per gate (passed in, never global)."""

    def __init__(self, max_chars: int = 64 << 20) -> None:
        self.max_chars = max_chars
        self._texts: set[str] = set()
        self._chars = 0

    def __contains__(self, text: str) -> bool:
        return text in self._texts

    def add(self, text: str) -> None:
        self._chars += len(text)
        if self._chars > self.max_chars:  # a new set: a reader elsewhere keeps its own
            self._texts, self._chars = set(), len(text)
        self._texts.add(text)


# A result that says it started tasks: where its segment is, the call it answers, and each
# task's key (with the file its output is written to, if it says).
Start = tuple[int, str, tuple[tuple[str, str | None], ...]]


def starts(segments: Sequence[Segment], quiet: Quiet | None = None, first: int = 0) -> list[Start]:
    """The tool results from `segments[first]` on that say they started a task (`quiet`:
    outputs searched before, and found to start none)."""
    out: list[Start] = []
    for i in range(first, len(segments)):
        seg = segments[i]
        if seg.role is not Role.TOOL_RESULT or seg.call_id is None:
            continue
        text = seg.text
        if quiet is not None and text in quiet:
            continue
        if " with ID: " not in text and "with session ID " not in text and "cell ID " not in text:
            if quiet is not None:
                quiet.add(text)
            continue  # a plain substring test first: this runs over every result resent
        tasks: list[tuple[str, str | None]] = [
            (m.group("id"), m.group("path")) for m in _STARTED.finditer(text)
        ]
        tasks += (("session:" + m.group("id"), None) for m in _SESSION.finditer(text))
        tasks += (("cell:" + m.group("id"), None) for m in _CELL.finditer(text))
        if tasks:
            out.append((i, seg.call_id, tuple(tasks)))
    return out


def producers(
    walk: Walk, found: Quiet | Sequence[Start] | None = None
) -> dict[str, tuple[ToolCall, ...]]:
    """For each answered follow-up call (and each Read of a task's output file), the calls
    that started its task; a call gate cannot tie to a start gets an unseen call, which is
    decided as the strictest (`found`: the walk's starts, or outputs searched before and
    found to start none)."""
    if found is None or isinstance(found, Quiet):
        found = starts(walk.segments, found)
    names = {c.name for c in walk.calls}
    if not found and names.isdisjoint(FOLLOW_UPS):
        return {}  # no task started, and no call that follows one up
    started: dict[str, list[ToolCall]] = {}  # task or session id → the calls that started it
    files: dict[str, list[ToolCall]] = {}  # a task's output file → the same
    by_id = {c.id: c for c in walk.calls} if found else {}
    for _, call_id, tasks in found:
        call = by_id.get(call_id)
        if call is None or (call.name in FOLLOW_UPS and call.name not in _RESUMING):
            continue
        for key, path in tasks:
            started.setdefault(key, []).append(call)
            if path:
                files.setdefault(path, []).append(call)
    # Another agent's tool may be called `wait`: it is code mode's when it names a cell or
    # the request holds code-mode cells.
    cells = "exec" in names
    out: dict[str, tuple[ToolCall, ...]] = {}
    for call in walk.calls:
        if call.result is None:
            continue
        if call.name in FOLLOW_UPS and (call.name != "wait" or cells or "cell_id" in call.input):
            task = _task(call)
            candidates = started.get(task, []) if task is not None else []
            others = [c for c in candidates if c.id != call.id]
            out[call.id] = tuple(others) or (
                ToolCall(call.id, UNKNOWN_TASK, {UNSEEN: True}, call.result),
            )
        elif started and (reads := _reads_output(call, files, started)):
            out[call.id] = reads
    return out


def _reads_output(
    call: ToolCall, files: dict[str, list[ToolCall]], started: dict[str, list[ToolCall]]
) -> tuple[ToolCall, ...]:
    """The commands whose output file a call names anywhere in its input (a `Read` of it,
    `cat`, `tail -f` of it by another spelling of its directory)."""
    text = json.dumps(call.input, ensure_ascii=False)
    if ".output" not in text:
        return ()
    out = [c for path, cs in files.items() if path in text for c in cs]
    out += [c for task, cs in started.items() if f"{task}.output" in text for c in cs]
    return tuple({c.id: c for c in out if c.id != call.id}.values())


def _task(call: ToolCall) -> str | None:
    for key in FOLLOW_UPS[call.name]:
        value = call.input.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
            prefix = {"write_stdin": "session:", "wait": "cell:"}.get(call.name, "")
            return prefix + str(value)
    return None
