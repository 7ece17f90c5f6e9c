"""One history scan from start to end: the stores found, their findings, and what the
audit says about each value."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path

from gate.history import engine, sent, summary, workers
from gate.history.engine import Filters, Found, Progress, Screens
from gate.history.model import Agent, Form
from gate.history.readers import Env
from gate.history.registry import READERS
from gate.rules.layers import PolicyStore
from gate.screen.content import SecretScreen

PARALLEL_BYTES = 64 << 20


@dataclass(frozen=True, slots=True, kw_only=True)
class Result:
    found: tuple[Found, ...]  # values in memory only, for redaction
    groups: list[summary.Group]
    stores: int
    forms: dict[Path, Form]
    errors: list[str]


def run(
    env: Env,
    data_dir: Path,
    agents: Iterable[Agent] = (),
    filters: Filters | None = None,
    progress: Progress | None = None,
    audit: Path | None = None,
    jobs: int = 1,
    parallel_bytes: int | None = None,
) -> Result:
    filters = filters or Filters()
    wanted = set(agents) or set(READERS)
    readers = [r for a, r in READERS.items() if a in wanted]
    stores = engine.discover(readers, env)
    # Aider keeps its history inside each project: look in every project the other
    # agents' sessions name too.
    known = {str(p) for p in env.projects}
    more = sorted(h for h in engine.project_hints(stores) if h not in known and Path(h).is_dir())
    if more:
        seen = {s.path for _, s in stores}
        wider = replace(env, projects=(*env.projects, *map(Path, more)))
        stores += [(r, s) for r, s in engine.discover(readers, wider) if s.path not in seen]
    if filters.since is not None:  # a store untouched since then holds nothing newer
        stores = [(r, s) for r, s in stores if _mtime(s.path) >= filters.since]
    screens = Screens(secret=SecretScreen.load(data_dir), policies=PolicyStore(warn=False))
    # The denied values of the projects named, in this order (the first file a value is
    # found in names it): a worker process adds the same batches in the same order.
    batches = [[str(p) for p in env.projects], sorted(engine.project_hints(stores))]
    for batch in batches:
        screens.add_projects(batch)
    errors: list[str] = []
    # Worker processes start in about a second: worth it only for a large history.
    big = PARALLEL_BYTES if parallel_bytes is None else parallel_bytes
    if jobs > 1 and len(stores) > 1 and sum(_size(s.path) for _, s in stores) > big:
        found = tuple(workers.scan(stores, data_dir, batches, filters, jobs, progress, errors))
    else:
        found = tuple(engine.scan(stores, screens, filters, progress, errors))
    values = {f.finding.digest: sent.Value(f.value, f.finding.source) for f in found}
    audit = audit or data_dir / "audit.db"
    gates = sent.check(audit, values)
    if any(g.seen is sent.Seen.UNKNOWN for g in gates.values()):
        errors.append(f"{audit}: cannot read gate's audit; 'through gate' is unknown")
    return Result(
        found=found,
        groups=summary.group((f.finding for f in found), gates),
        stores=len(stores),
        forms={s.path: s.form for _, s in stores},
        errors=errors,
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _mtime(path: Path) -> float:
    try:
        newest = path.stat().st_mtime
        wal = Path(f"{path}-wal")
        return max(newest, wal.stat().st_mtime) if wal.exists() else newest
    except OSError:
        return 0.0
