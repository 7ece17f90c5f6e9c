"""Stores screened in parallel: one process per core, each with its own screens (the
scanner and denied-file index are built once per process; nothing is shared)."""

from __future__ import annotations

import multiprocessing
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from gate.history import engine
from gate.history.engine import Filters, Found, Progress, Screens
from gate.history.model import Store
from gate.history.readers import Reader
from gate.history.registry import READERS
from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen

_screens: Screens | None = None


def _start(data_dir: Path, roots: list[str]) -> None:
    # Per worker process: its own screens, built before the first store.
    global _screens  # process-local by construction: each worker has its own
    _screens = Screens(SecretScreen.load(data_dir), PolicyStore(warn=False))
    _screens.add_projects(roots)


def _one(store: Store, filters: Filters) -> tuple[list[Found], str | None]:
    assert _screens is not None
    try:
        return list(engine.scan_store(READERS[store.agent], store, _screens, filters)), None
    except (OSError, sqlite3.Error) as exc:
        return [], f"{store.path}: cannot read ({exc})"


def scan(
    stores: list[tuple[Reader, Store]],
    data_dir: Path,
    roots: list[str],
    filters: Filters,
    jobs: int,
    progress: Progress | None,
    errors: list[str],
) -> Iterator[Found]:
    """Like engine.scan, across `jobs` processes; findings come back store by store."""
    # forkserver: no fork of a process that may run threads (a gate, a test's server).
    ctx = multiprocessing.get_context("forkserver")
    with ProcessPoolExecutor(
        jobs, mp_context=ctx, initializer=_start, initargs=(data_dir, roots)
    ) as pool:
        futures = {pool.submit(_one, s, filters): s for _, s in stores}
        for n, fut in enumerate(as_completed(futures), 1):
            if progress:
                progress(futures[fut], n, len(stores))
            found, error = fut.result()
            if error:
                errors.append(error)
            yield from found
