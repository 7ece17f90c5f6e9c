"""Stores screened in parallel: one process per core, each with its own screens (the
scanner and denied-file index are built once per process; nothing is shared)."""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import sqlite3
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from pathlib import Path

from gate import log
from gate.history import engine
from gate.history.engine import Filters, Found, Progress, Screens
from gate.history.model import Store
from gate.history.readers import Reader
from gate.history.registry import READERS
from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen

_screens: Screens | None = None


def _start(data_dir: Path, batches: list[list[str]]) -> None:
    # Per worker process: its own screens, built before the first store. Ctrl-C is the
    # parent's to handle: it stops the workers itself, without a traceback from each.
    global _screens  # process-local by construction: each worker has its own
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    log.configure(level="WARNING")  # as the parent: no debug lines on the user's terminal
    _screens = Screens(secret=SecretScreen.load(data_dir), policies=PolicyStore(warn=False))
    for batch in batches:
        _screens.add_projects(batch)


def _one(store: Store, filters: Filters) -> tuple[list[Found], str | None]:
    assert _screens is not None
    try:
        return list(engine.scan_store(READERS[store.agent], store, _screens, filters)), None
    except (OSError, sqlite3.Error) as exc:
        return [], f"{store.path}: cannot read ({exc})"


def scan(
    stores: list[tuple[Reader, Store]],
    data_dir: Path,
    batches: list[list[str]],
    filters: Filters,
    jobs: int,
    progress: Progress | None,
    errors: list[str],
) -> Iterator[Found]:
    """Like engine.scan, across `jobs` processes, with the same findings in the same
    order: stores are handed out largest first (so no big one is left for last), and
    their findings given back in the stores' own order as soon as all before are in."""
    # forkserver: no fork of a process that may run threads (a gate, a test's server).
    ctx = multiprocessing.get_context("forkserver")
    pool = ProcessPoolExecutor(
        jobs, mp_context=ctx, initializer=_start, initargs=(data_dir, batches)
    )
    # Ctrl-C and a kill (SIGTERM) only note the signal: raised from a handler, the
    # exception can land inside the wait's lock release and surface as "release unlocked
    # lock". The loop below wakes every quarter second, sees the note, stops the workers
    # and raises from plain code.
    main = threading.current_thread() is threading.main_thread()
    stopped: list[int] = []
    before = {s: signal.signal(s, lambda n, _f: stopped.append(n)) for s in _STOPS} if main else {}
    try:
        largest = sorted(range(len(stores)), key=lambda i: -_size(stores[i][1].path))
        futures = {pool.submit(_one, stores[i][1], filters): i for i in largest}
        ready: dict[int, tuple[list[Found], str | None]] = {}
        following = 0
        pending = set(futures)
        n = 0
        while pending:
            done, pending = wait(pending, timeout=0.25, return_when=FIRST_COMPLETED)
            if stopped:
                raise (
                    KeyboardInterrupt
                    if stopped[0] == signal.SIGINT
                    else SystemExit(128 + stopped[0])
                )
            for fut in sorted(done, key=lambda f: futures[f]):
                n += 1
                i = futures[fut]
                if progress:
                    progress(stores[i][1], n, len(stores))
                ready[i] = fut.result()
            while following in ready:
                found, error = ready.pop(following)
                following += 1
                if error:
                    errors.append(error)
                yield from found
        if stopped:  # after the last store: still stopped, not lost with the handler
            raise KeyboardInterrupt if stopped[0] == signal.SIGINT else SystemExit(128 + stopped[0])
    except BaseException:
        # Ctrl-C, a failed worker, or a consumer that stopped reading: stop the workers
        # now rather than let each finish its store.
        for proc in list(getattr(pool, "_processes", {}).values()):
            proc.terminate()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        for sig, handler in before.items():
            if handler is not None:  # None: installed outside Python, nothing to restore
                signal.signal(sig, handler)
    pool.shutdown(wait=True)


_STOPS = (signal.SIGINT, signal.SIGTERM)


def _size(path: Path) -> int:
    total = 0
    for p in (path, Path(f"{path}-wal")):
        with contextlib.suppress(OSError):
            total += p.stat().st_size
    return total
