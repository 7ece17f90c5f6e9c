"""`gate search`: did this text, or any value of this file, leave the machine?"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from gate import dirs
from gate.audit import search
from gate.audit.store import AuditStore
from gate.cli.audit import open_store, when
from gate.cli.common import echo_json, json_option, since_option
from gate.errors import GateError
from gate.rules.model import Effect, Rule
from gate.screen import secrets
from gate.screen.fingerprints import DeniedIndex, Source, encoded_forms, units_of


@click.command("search")
@click.argument("words", nargs=-1)
@click.option("--value-of", "value_of", type=click.Path(exists=True, dir_okay=False,
                                                         path_type=Path),
              help="Instead of TEXT: did any value in this file (a .env, a key file) leave?")
@since_option
@click.option("--limit", type=click.IntRange(1), default=50, show_default=True)
@json_option
def search_cmd(words: tuple[str, ...], value_of: Path | None, since: float | None, limit: int,
               as_json: bool) -> None:
    """Search what was sent (full-text, with snippets), or check a file's values.

    `gate search integration tests` lists each stored piece of a body holding the text,
    the first request that sent it and how many sent it again. `gate search --value-of .env`
    looks for every value of the file, as written and encoded (base64, hex, URL, JSON), in
    everything sent, and in what gate withheld (by fingerprint); values are never printed.
    Exit 1 when something was found.
    """
    text = " ".join(words) if words else None
    if (text is None) == (value_of is None):
        raise click.UsageError("give TEXT or --value-of FILE (one of them)")
    store = open_store()
    if value_of is not None:
        found, withheld = _value_of(store, value_of, since, limit)
    else:
        assert text is not None
        try:
            found = search.text_search(store, text, since, limit)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from exc
        withheld = []
    meta = {r: store.get(r, body=False) or {} for f in found for r in (f.requests[0],)}
    if as_json:
        echo_json({"found": [f.to_json(meta) for f in found], "withheld": withheld})
    else:
        _print(found, withheld, meta)
    sys.exit(1 if found or withheld else 0)


def _value_of(store: AuditStore, path: Path, since: float | None,
              limit: int) -> tuple[list[search.Found], list[dict[str, Any]]]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise GateError(f"cannot read it: {exc}", where=str(path)) from exc
    units = list(dict.fromkeys(units_of(text)))
    if not units:
        raise GateError("no value in this file looks like a secret (KEY=VALUE lines,"
                        " credential fields, key-file lines of 8+ varied characters)",
                        where=str(path), hint="nothing to look for; check the file name")
    rule = Rule(Effect.DENY, "Read", str(path), "--value-of", 0, None)
    labels = {u: f"value {n} of {path.name}" for n, u in enumerate(units, 1)}
    matcher = DeniedIndex({u: Source(str(path), rule) for u in units})
    forms = {form: u for u in units for form in encoded_forms(u)}

    def match(chunk: str) -> list[tuple[int, int, str]]:
        return [(h.start, h.end, labels.get(forms.get(chunk[h.start:h.end], ""), "a value"))
                for h in matcher.find(chunk)]

    found = search.scan(store, match, since, limit)
    return found, _withheld(store, units, labels, since)


def _withheld(store: AuditStore, units: list[str], labels: dict[str, str],
              since: float | None) -> list[dict[str, Any]]:
    """Requests where gate redacted one of these values: matched by the keyed fingerprint
    the audit holds (it never holds the value)."""
    key_file = dirs.data_dir() / secrets.KEY_FILE
    if not key_file.exists():
        return []
    key = secrets.load_or_create_key(dirs.data_dir())
    prints = {secrets.keyed_hash(u, key)[:16]: labels[u] for u in units}
    out = []
    for row in store.rows(1 << 30, since=since, body=False):
        for w in row["withheld"]:
            if w.get("fingerprint") in prints:
                out.append({"request": row["id"], "ts": row["ts"], "kind": w.get("kind"),
                            "rule": w.get("rule"), "value": prints[w["fingerprint"]]})
    return sorted(out, key=lambda w: w["request"])


def _print(found: list[search.Found], withheld: list[dict[str, Any]],
           meta: dict[int, dict[str, Any]]) -> None:
    if not found and not withheld:
        click.echo("not found in what was sent")
    for f in found:
        first = meta[f.requests[0]]
        again = f", sent again by {len(f.requests) - 1} later" if len(f.requests) > 1 else ""
        label = f"{f.what}: " if f.what else ""
        click.echo(f"request {f.requests[0]}  {when(first['ts'])}  {first['agent'] or '-'}"
                   f"  {first['upstream']}{first['path']}{again}")
        click.echo(f"    {label}{f.snippet}")
    for w in withheld:
        click.echo(f"request {w['request']}  {when(w['ts'])}  {w['value']} was withheld"
                   f" ({w['kind']}, {w['rule']}): not sent")


COMMANDS = (search_cmd,)
