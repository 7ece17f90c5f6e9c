"""Worker processes that screen a large batch of strings gate has never seen.

A body gate has never seen (a new session's 2 MB history, a large file read) costs tens to
hundreds of milliseconds of pure-Python screening. In the proxy's process that time holds
the interpreter lock, so every other agent's stream and screening waits behind it. Sent to
a worker, the batch is screened on another core, at a lower scheduling priority, while the
proxy's thread waits for the answer with the lock released.

A worker runs the very functions the proxy would (the denied index's `redact`, then the
secret scanner over what is left, with the same time budget), built from the same denied
units and the shipped detectors; the caller files what it answers in the caches those
functions read first, so screening then finds every string of the batch worked out. The
pool only ever saves time, it never decides: whatever goes wrong here (a worker died, did
not answer in time, could not start, answered something else) the caller screens the
strings itself.

A worker is a plain child process (`python -c`, this package's directory first on its
path) reading and writing length-prefixed pickles on its stdin and stdout, which only gate
and its own child hold: nothing of the parent's main module is imported again, as
multiprocessing would.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from loguru import logger

from gate.screen.detectors import Finding

if TYPE_CHECKING:
    from gate.screen.fingerprints import DeniedIndex, Hit
    from gate.screen.secrets import Scanner

MIN_CHARS = 256 * 1024  # a batch smaller than this is screened in place: the hop costs more
# A batch no worker has answered by then is screened in place (the worker is stopped and
# another started for a later batch).
TIMEOUT = 30.0
WAIT = 2.0  # for a free worker, before a batch is screened in place
NICE = 10  # a worker yields the CPU to the proxy's own threads on a busy machine
_HEADER = struct.Struct("<Q")
READY = "ready"  # a worker's first frame, once its scanner is loaded
_ROOT = str(Path(__file__).resolve().parent.parent.parent)  # the directory holding gate/
BOOT = (  # what a worker runs
    f"import sys; sys.path.insert(0, {_ROOT!r}); from gate.screen.scan_pool import serve; serve()"
)


def default_workers() -> int:
    """One worker per core beyond the proxy's own, at least one, at most four."""
    return max(1, min(4, (os.cpu_count() or 2) - 1))


@dataclass(frozen=True, slots=True)
class Cold:
    """What a worker made of one string: the denied values in it, then the secrets in the
    string with those replaced (`Scanner.scan` of `DeniedIndex.redact`'s text)."""

    hits: tuple[Hit, ...]
    secrets: tuple[Finding, ...]


class ScanPool:
    """Workers owned by one gate (closed with it), started by the first batch worth
    sending; each is busy with one batch at a time."""

    def __init__(
        self,
        budget: float,
        workers: int | None = None,
        *,
        min_chars: int = MIN_CHARS,
        timeout: float = TIMEOUT,
        boot: str = BOOT,
    ) -> None:
        self.budget = budget
        self.min_chars = min_chars
        self.timeout = timeout
        self.batches = 0  # batches a worker screened (a figure for tests and benches)
        # The last worker used is the first offered: a second one starts only when one is
        # busy (each holds its own scanner, tens of megabytes).
        self._free: queue.LifoQueue[_Worker] = queue.LifoQueue()
        self._all = [_Worker(budget, boot) for _ in range(workers or default_workers())]
        for w in self._all:
            self._free.put(w)
        self._closed = False

    @property
    def pids(self) -> list[int]:
        """The process ids of the workers running now."""
        return [pid for w in self._all if (pid := w.pid) is not None]

    def screen(
        self, texts: Sequence[str], index: DeniedIndex | None, scanner: Scanner | None
    ) -> list[Cold] | None:
        """Each text's Cold, or None when no worker could give them now (the caller
        screens them itself)."""
        if self._closed or (
            scanner is not None and (not scanner.shipped or scanner.budget != self.budget)
        ):
            return None  # a worker loads the shipped detectors, with this pool's budget
        try:
            worker = self._free.get(timeout=WAIT)
        except queue.Empty:
            return None
        try:
            if self._closed:
                return None
            began = time.monotonic()
            got = worker.screen(texts, index, scanner is not None, self.timeout)
        finally:
            self._free.put(worker)
        if got is not None:
            self.batches += 1
            logger.debug(
                "screened {} new strings ({} KiB) in a worker in {:.0f} ms",
                len(texts),
                sum(map(len, texts)) >> 10,
                (time.monotonic() - began) * 1000,
            )
        return got

    def ready(self, timeout: float = TIMEOUT) -> bool:
        """Start a worker now and wait until it has loaded (tests, benches); whether it has."""
        deadline = time.monotonic() + timeout
        worker = self._free.get(timeout=timeout)
        try:
            while not worker.started(timeout):
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.02)
            return True
        finally:
            self._free.put(worker)

    def close(self) -> None:
        self._closed = True
        for w in self._all:
            w.close()


class _Worker:
    """One child process, and the denied index it was last sent."""

    def __init__(self, budget: float, boot: str) -> None:
        self.budget = budget
        self.boot = boot
        self._proc: subprocess.Popen[bytes] | None = None
        self._ready = False
        self._index: DeniedIndex | None = None  # the index the worker holds now
        # Starting and stopping the process, against a close from another thread (a
        # batch in flight then reads the end of its output and is screened in place).
        self._lock = threading.Lock()
        self._closed = False

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def screen(
        self, texts: Sequence[str], index: DeniedIndex | None, secrets: bool, timeout: float
    ) -> list[Cold] | None:
        try:
            if not self.started(timeout):
                return None  # starting: this batch is screened in place meanwhile
            proc = self._proc
            assert proc is not None and proc.stdin is not None and proc.stdout is not None
            units = None if index is self._index else (index.units if index else {})
            _send(proc.stdin, (units, secrets, list(texts)))
            self._index = index
            rows = _receive(proc.stdout, time.monotonic() + timeout)
            if not isinstance(rows, list) or len(rows) != len(texts):
                raise ValueError("an answer of the wrong shape")
            return _colds(rows, index)
        except Exception as exc:  # died, timed out, spoke garbage: a new one next time
            logger.warning("a screening worker failed ({}): screening in place", exc)
            self.stop()
            return None

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.stop()

    def stop(self) -> None:
        with self._lock:
            proc, self._proc, self._ready, self._index = self._proc, None, False, None
        if proc is not None:
            proc.kill()
            proc.wait()
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()

    def started(self, timeout: float) -> bool:
        """Whether the worker is up and ready; starts one when none runs."""
        if self._proc is None or self._proc.poll() is not None:
            self.stop()
            with self._lock:
                if self._closed:
                    return False
                self._proc = self._spawn()
            return False
        if not self._ready:
            assert self._proc.stdout is not None
            if not select.select([self._proc.stdout.fileno()], [], [], 0)[0]:
                return False  # still loading
            if _receive(self._proc.stdout, time.monotonic() + timeout) != READY:
                raise ValueError("the worker did not start")
            self._ready = True
        return True

    def _spawn(self) -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            # -P: the working directory (an agent's project) is not on its path.
            [sys.executable, "-P", "-c", self.boot, repr(self.budget)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
            cwd=_ROOT,
        )


def _colds(rows: list[Any], index: DeniedIndex | None) -> list[Cold]:
    """A worker's answers, their sources the caller's own objects."""
    from gate.screen.fingerprints import Hit

    sources = {} if index is None else {s: s for s in index.units.values()}
    return [
        Cold(
            tuple(Hit(s, e, sources.get(src, src)) for s, e, src in hits),
            tuple(Finding(*f) for f in found),
        )
        for hits, found in rows
    ]


def _send(pipe: IO[bytes], value: Any) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    pipe.write(_HEADER.pack(len(data)) + data)
    pipe.flush()


def _receive(pipe: IO[bytes], deadline: float | None = None) -> Any:
    (size,) = _HEADER.unpack(_read(pipe, _HEADER.size, deadline))
    # Only this gate and its own worker hold either end of the pipe.
    return pickle.loads(_read(pipe, size, deadline))  # noqa: S301


def _read(pipe: IO[bytes], size: int, deadline: float | None) -> bytes:
    fd, chunks, left = pipe.fileno(), [], size
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError("no answer in time")
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise EOFError("the worker closed its output")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def serve() -> None:
    """A worker: batches of strings in, what the screens make of them out, until its input
    closes."""
    from gate.screen.fingerprints import DeniedIndex
    from gate.screen.secrets import Scanner

    with contextlib.suppress(OSError):  # not allowed: the proxy's priority, as in place
        os.nice(NICE)
    scanner = Scanner(budget=float(sys.argv[1]), cache_entries=0)
    index: DeniedIndex | None = None
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    _send(stdout, READY)
    while True:
        try:
            units, secrets, texts = _receive(stdin)
        except EOFError:
            return
        if units is not None:
            index = DeniedIndex(units) if units else None
        rows = []
        for text in texts:
            new, hits = index.redact(text) if index is not None else (text, [])
            found = scanner.scan_uncached(new) if secrets else ()
            rows.append(
                (
                    [(h.start, h.end, h.source) for h in hits],
                    [(f.start, f.end, f.kind, f.rule_id, f.tier) for f in found],
                )
            )
        _send(stdout, rows)
