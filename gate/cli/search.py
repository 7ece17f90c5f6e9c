"""`gate search`: did this text, or any value of this file, leave the machine?"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click

from gate import dirs
from gate.audit import search, values
from gate.audit.store import AuditStore
from gate.cli.audit import open_store, when
from gate.cli.common import echo_json, json_option, since_option
from gate.errors import GateError
from gate.rules.model import Effect, Rule
from gate.screen import secrets
from gate.screen.fingerprints import DeniedIndex, Source, encoded_forms, units_of


@click.command("search")
@click.argument("words", nargs=-1)
@click.option(
    "--value-of",
    "value_of",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="Instead of TEXT: did any value in this file (a .env, a key file) leave?",
)
@since_option
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@json_option
def search_cmd(
    words: tuple[str, ...], value_of: Path | None, since: float | None, limit: int, as_json: bool
) -> None:
    """Search what was sent (full-text, with snippets), or check a file's values.

    `gate search integration tests` lists each stored piece of a body holding the text,
    the first request that sent it and how many sent it again. `gate search --value-of .env`
    answers per value of the file (KEY=VALUE values, key lines, and any token the secret
    detectors find in prose): sent (which requests, when, where, whether a person approved
    it), withheld (by which rule or answer), or never seen. It looks for each value as
    written and encoded (base64, hex, URL, JSON) in everything sent, and by fingerprint in
    what gate withheld; values are never printed. Exit 1 when something was found (for
    --value-of: when a value was sent).
    """
    text = " ".join(words) if words else None
    if (text is None) == (value_of is None):
        raise click.UsageError("give TEXT or --value-of FILE (one of them)")
    store = open_store()
    if value_of is not None:
        answers = _value_of(store, value_of, since)
        if as_json:
            echo_json({"file": str(value_of), "values": [a.to_json() for a in answers]})
        else:
            _print_values(answers)
        sys.exit(1 if any(a.status is values.Status.SENT for a in answers) else 0)
    assert text is not None
    try:
        found = search.text_search(store, text, since, limit)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    meta = {r: store.get(r, body=False) or {} for f in found for r in (f.requests[0],)}
    if as_json:
        echo_json({"found": [f.to_json(meta) for f in found]})
    else:
        _print(found, meta)
    sys.exit(1 if found else 0)


def _value_of(store: AuditStore, path: Path, since: float | None) -> list[values.Answer]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise GateError(f"cannot read it: {exc}", where=str(path)) from exc
    # A token in prose ("my token is ghp_...") travels without its line: the detectors
    # find it wherever it sits, the file's KEY=VALUE and key lines are its own values.
    detected = [text[f.start : f.end] for f in secrets.Scanner().scan(text)]
    lines = [u for u in units_of(text) if not any(d in u for d in detected if d != u)]
    # Numbered in file order, whichever way each was found: a value's number must not
    # depend on whether a detector happens to know it (an all-digit tail fails the generic
    # assignment rule, and "value 1" would then have named the token on the next line).
    found = dict.fromkeys([*detected, *lines])
    units = sorted(found, key=lambda u: p if (p := text.find(u)) >= 0 else len(text))
    if not units:
        raise GateError(
            "no value in this file looks like a secret (KEY=VALUE lines,"
            " credential fields, key-file lines of 8+ varied characters, tokens"
            " the detectors know)",
            where=str(path),
            hint="nothing to look for; check the file name",
        )
    rule = Rule(
        effect=Effect.DENY, tool="Read", specifier=str(path), source="--value-of", line=0, root=None
    )
    labels = {u: f"value {n} of {path.name}" for n, u in enumerate(units, 1)}
    matcher = DeniedIndex({u: Source(str(path), rule) for u in units})
    forms = {form: u for u in units for form in encoded_forms(u)}
    folded = {form.lower(): u for form, u in forms.items()}  # hex in either case

    def match(chunk: str) -> list[tuple[int, int, str]]:
        hits = []
        for h in matcher.find(chunk):
            seen = chunk[h.start : h.end]
            if (unit := forms.get(seen) or folded.get(seen.lower())) is not None:
                hits.append((h.start, h.end, labels[unit]))
        return hits

    prints: dict[str, str] = {}
    if (dirs.data_dir() / secrets.KEY_FILE).exists():
        key = secrets.load_or_create_key(dirs.data_dir())
        prints = {secrets.keyed_hash(u, key)[:16]: labels[u] for u in units}
    look = values.Lookup(labels=tuple(labels.values()), match=match, prints=prints, file=path)
    return values.answer(store, look, since)


def _print_values(answers: list[values.Answer]) -> None:
    for a in answers:
        if a.status is values.Status.SENT:
            first = a.sent[0]
            approved = [s for s in a.sent if s.approved_by]
            click.echo(
                f"{a.value}: SENT in {len(a.sent)} request(s), first by request"
                f" {first.request} at {when(first.ts)} ({first.agent or '-'}) to"
                f" {first.upstream}{first.path.split('?')[0]}"
            )
            if approved:
                by = sorted({s.approved_by or "?" for s in approved})
                click.echo(
                    f"    approved by {' or '.join(by)} in request(s)"
                    f" {_ids(s.request for s in approved)}"
                )
            if first.snippet:
                click.echo(f"    {first.snippet}")
            if a.withheld:
                click.echo(f"    also withheld in request(s) {_ids(h.request for h in a.withheld)}")
        elif a.status is values.Status.WITHHELD:
            why = sorted({_why(h) for h in a.withheld})
            click.echo(
                f"{a.value}: withheld, never sent, in request(s)"
                f" {_ids(h.request for h in a.withheld)} ({'; '.join(why)})"
            )
        else:
            click.echo(f"{a.value}: never seen in what was sent or withheld")


def _why(h: values.Held) -> str:
    how = f"rule {h.rule}" if h.kind != "blocked" else h.rule
    if h.answer:
        how += f", answered {h.answer} by {h.by or '?'}"
    return f"{'request blocked: ' if h.blocked else ''}{h.kind}, {how}"


def _ids(ids: Iterable[int]) -> str:
    got = sorted(set(ids))
    return ", ".join(map(str, got[:8])) + (f" and {len(got) - 8} more" if len(got) > 8 else "")


def _print(found: list[search.Found], meta: dict[int, dict[str, Any]]) -> None:
    if not found:
        click.echo("not found in what was sent")
    for f in found:
        first = meta[f.requests[0]]
        again = f", sent again by {len(f.requests) - 1} later" if len(f.requests) > 1 else ""
        click.echo(
            f"request {f.requests[0]}  {when(first['ts'])}  {first['agent'] or '-'}"
            f"  {first['upstream']}{first['path']}{again}"
        )
        click.echo(f"    {f.snippet}")


COMMANDS = (search_cmd,)
