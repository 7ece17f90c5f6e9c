"""The scan itself: every store of every agent through the wire's screens (denied-file
values of the projects the sessions ran in, then the secret detectors), streamed."""

from __future__ import annotations

import os
import re
import sqlite3
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path

from gate.history import sources, sqlite_ro
from gate.history.item import Item
from gate.history.model import Finding, Form, Store
from gate.history.prefilter import Prefilter
from gate.history.readers import Env, Notes, Reader
from gate.rules.layers import PolicyStore
from gate.rules.model import SecretAction
from gate.screen import masking
from gate.screen.content import SecretScreen
from gate.screen.denied_walk import UNSCREENED
from gate.screen.fingerprints import DeniedIndex, Source, collect, encoded_forms
from gate.screen.secrets import keyed_hash, placeholder

_CWD = re.compile(rb'"(?:cwd|directory)"\s*:\s*"([^"]{1,4096})"')
HINT_BYTES = 64 << 10  # how much of a transcript is read for the directory it ran in


@dataclass(frozen=True, slots=True)
class Filters:
    since: float | None = None
    project: Path | None = None

    def keep(self, f: Finding) -> bool:
        if self.since is not None and f.where.ts is not None and f.where.ts < self.since:
            return False
        if self.project is not None:
            return f.where.project is not None and _within(f.where.project, self.project)
        return True


@dataclass(slots=True, kw_only=True)
class Screens:
    """The wire's screens: SecretScreen (detectors + the install's placeholder key) and the
    denied-file values of every project the stores name."""

    secret: SecretScreen
    policies: PolicyStore
    denied: DeniedIndex | None = None
    roots: set[str] = field(default_factory=set)
    _prefilter: Prefilter | None = None

    def add_projects(self, roots: Iterable[str]) -> None:
        # "/" (OpenCode's worktree outside git) would walk the whole disk; it is no project.
        new = {
            r
            for r in roots
            if r
            and r not in self.roots
            and os.path.isdir(r)
            and os.path.dirname(os.path.abspath(r)) != os.path.abspath(r)
        }
        if not new and self.denied is not None:
            return
        self.roots |= new
        units: dict[str, Source] = dict(self.denied.units) if self.denied else {}
        todo: list[str | None] = [*sorted(new)] or [None]
        for root in todo:
            for unit, source in collect(self.policies.policy_for(root), root).items():
                units.setdefault(unit, source)
        self.denied = DeniedIndex(units)
        self._prefilter = None

    def worth(self, raw: bytes) -> bool:
        """Could the screens find anything in what these bytes decode to (as JSON or as
        text)? Only then is a JSONL line parsed and its strings screened one by one."""
        if self._prefilter is None:
            forms = (
                [f for unit in self.denied.units for f in encoded_forms(unit)]
                if self.denied is not None
                else []
            )
            words = [w for d in self.secret.scanner.detectors for w in d.keywords]
            letters = self.denied.could_hold if self.denied is not None else None
            finders = any(d.finder for d in self.secret.scanner.detectors)
            self._prefilter = Prefilter(words, forms, letters, phrases=finders)
        return self._prefilter.maybe(raw)


@dataclass(frozen=True, slots=True)
class Found:
    """A finding and, in memory only, its value (for the audit check and for redaction)."""

    finding: Finding
    value: str


Progress = Callable[[Store, int, int], None]  # store, its index, how many


def discover(readers: Iterable[Reader], env: Env) -> list[tuple[Reader, Store]]:
    return [(r, s) for r in readers for s in r.stores(env)]


def project_hints(stores: Iterable[tuple[Reader, Store]]) -> set[str]:
    """Project directories the stores name, from their metadata or a transcript's first
    lines (Claude Code and Codex record the working directory near the top)."""
    roots = set()
    for _, store in stores:
        if store.project:
            roots.add(store.project)
        elif store.form is Form.SQLITE:
            roots.update(_sqlite_dirs(store.path))
        elif store.form is Form.JSONL:
            try:
                with open(store.path, "rb") as f:
                    head = f.read(HINT_BYTES)
            except OSError:
                continue
            roots.update(m.group(1).decode("utf-8", "replace") for m in _CWD.finditer(head))
    return roots


def _sqlite_dirs(path: Path) -> set[str]:
    """Distinct working directories a database records (cwd, directory, worktree columns)."""
    out: set[str] = set()
    try:
        with sqlite_ro.open_ro(path) as db:
            for table in sqlite_ro.tables(db, with_fts=False):
                for col in set(table.columns) & {"cwd", "directory", "worktree"}:
                    q = f'SELECT DISTINCT "{col}" FROM "{table.name}" LIMIT 1000'  # noqa: S608
                    out.update(v for (v,) in db.execute(q) if isinstance(v, str))
    except (OSError, sqlite3.Error):
        pass
    return out


def scan(
    stores: list[tuple[Reader, Store]],
    screens: Screens,
    filters: Filters = Filters(),
    progress: Progress | None = None,
    errors: list[str] | None = None,
) -> Iterator[Found]:
    screens.add_projects(project_hints(stores))
    for n, (reader, store) in enumerate(stores, 1):
        if progress:
            progress(store, n, len(stores))
        try:
            yield from scan_store(reader, store, screens, filters)
        except (OSError, sqlite3.Error) as exc:
            if errors is not None:
                errors.append(f"{store.path}: cannot read ({exc})")


def scan_store(
    reader: Reader, store: Store, screens: Screens, filters: Filters = Filters()
) -> Iterator[Found]:
    notes = Notes()
    kept: list[Found] = []
    for item, text in sources.pieces(reader, store, notes, screens.worth):
        kept += (f for f in _screen(reader, item, text, notes, screens) if filters.keep(f.finding))
    for found in kept:
        # A title can come after the lines it names (Claude Code appends ai-title lines).
        w = found.finding.where
        if w.title is None and notes.title is not None and notes.session in (None, w.session):
            w = replace(w, title=notes.title)
            found = Found(replace(found.finding, where=w), found.value)
        yield found


def _screen(
    reader: Reader, item: Item, text: str, notes: Notes, screens: Screens
) -> Iterator[Found]:
    key = screens.secret.key
    hits: list[tuple[int, int, str, str, str, str, str | None]] = []
    if screens.denied is not None and len(screens.denied):
        for h in screens.denied.hits(text):
            if h.source is UNSCREENED:
                continue  # a blob too large to read: not known to hold anything
            hits.append(
                (
                    h.start,
                    h.end,
                    "denied-file",
                    h.source.rule.text,
                    "denied",
                    h.source.placeholder(),
                    h.source.path,
                )
            )
    taken = {(h[0], h[1]): i for i, h in enumerate(hits)}
    for f in screens.secret.scanner.scan(text):
        over = [i for (s, e), i in taken.items() if s < f.end and f.start < e]
        if over:
            # The denied value's placeholder wins, as on the wire; the detector names it.
            for i in over:
                if hits[i][:2] == (f.start, f.end):
                    hits[i] = (f.start, f.end, f.kind, hits[i][3], str(f.tier), *hits[i][5:])
            continue
        value = text[f.start : f.end]
        hits.append(
            (f.start, f.end, f.kind, f.rule_id, str(f.tier), placeholder(f, value, key), None)
        )
    for start, end, kind, rule, tier, tag, source in sorted(hits):
        value = text[start:end]
        at_item = item
        if isinstance(item.doc, str) and item.line is not None and item.table is None:
            # A text block or torn line: the line the value starts on, and that line alone.
            first = text.rfind("\n", 0, start) + 1
            last = text.find("\n", start)
            at_item = Item(
                store=item.store,
                line=item.line + text.count("\n", 0, start),
                doc=text[first : None if last == -1 else last],
                calls=item.calls,
            )
        where = reader.describe(at_item, notes)
        if not _allowed(screens, where.project, kind, rule, tier, source is not None):
            yield Found(
                Finding(
                    agent=reader.agent,
                    store=item.store.path,
                    where=where,
                    kind=kind,
                    rule=rule,
                    tier=tier,
                    digest=keyed_hash(value, key),
                    preview=masking.preview(value),
                    replacement=tag,
                    source=source,
                ),
                value,
            )


def _allowed(
    screens: Screens, project: str | None, kind: str, rule: str, tier: str, denied: bool
) -> bool:
    """A secret the user's `secrets:` policy allows on the wire is not a finding here."""
    if denied:
        return False
    policy = screens.policies.policy_for(project if project and os.path.isdir(project) else None)
    return policy.secret_action(kind, rule, tier) is SecretAction.ALLOW


def _within(path: str, top: Path) -> bool:
    try:
        Path(path).resolve().relative_to(top.resolve())
    except ValueError:
        return False
    return True
