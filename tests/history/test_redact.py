"""`gate history redact` and `restore`: every copy replaced with the wire's placeholders,
every store still valid for its agent, and the originals back byte for byte."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from history.builders import Planted, every_agent
from history.kit import holding, integrity, invoke, scan_json, tree

from gate.screen.detectors import Finding, Tier
from gate.screen.secrets import load_or_create_key, placeholder


@pytest.fixture
def planted(tmp_path: Path, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch):
    p, files = every_agent(tmp_path / "user")
    monkeypatch.chdir(p.project)
    return p, files


def _redact(p: Planted, *extra: str) -> tuple[int, str, str]:
    return invoke("history", "redact", "--home", str(p.home), *extra)


def _same_but_strings(old: Any, new: Any, values: tuple[str, ...]) -> None:
    """Only strings that held a value changed, and nothing else in the object."""
    assert type(old) is type(new)
    if isinstance(old, dict):
        assert list(old) == list(new)
        for k in old:
            _same_but_strings(old[k], new[k], values)
    elif isinstance(old, list):
        assert len(old) == len(new)
        for a, b in zip(old, new, strict=True):
            _same_but_strings(a, b, values)
    elif isinstance(old, str) and old != new:
        assert any(v in old for v in values) and "[gate: " in new
        assert not any(v in new for v in values)
    else:
        assert old == new


def test_redact_removes_every_copy_and_keeps_stores_valid(
    planted, gate_dirs: dict[str, Path]
) -> None:
    p, files = planted
    before = {path: path.read_bytes() for paths in files.values() for path in paths}
    code, out, err = _redact(p, "--yes")
    assert code == 0, out + err
    assert p.token not in out + err and p.denied not in out + err
    assert holding(p.home, p.token, p.denied) == []
    assert holding(p.project, p.token, p.denied) == []
    for path, old in before.items():
        if path.name.endswith(".jsonl"):
            old_lines, new_lines = old.splitlines(), path.read_bytes().splitlines()
            assert len(old_lines) == len(new_lines)
            for a, b in zip(old_lines, new_lines, strict=True):
                if a == b:
                    continue
                _same_but_strings(orjson.loads(a), orjson.loads(b), (p.token, p.denied))
        elif path.suffix in (".db", ".sqlite"):
            assert integrity(path) == "ok"
            assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
        elif path.suffix == ".json":
            json.loads(path.read_text())
    # The full-text indexes answer nothing for the old value (rebuilt, not just the rows).
    word = p.token.split("_", 1)[1]
    for db, table in (
        (files["hermes"][0], "messages_fts"),
        (files["hermes"][0], "messages_fts_trigram"),
        (files["copilot"][2], "search_index"),
    ):
        con = sqlite3.connect(db)
        hits = con.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ?",  # noqa: S608
            (f'"{word}"',),
        ).fetchall()
        con.close()
        assert hits == [], (db, table)
    code, doc = scan_json(p.home)
    assert (code, doc["copies"]) == (0, 0)


def test_placeholders_are_the_wires(planted, gate_dirs: dict[str, Path]) -> None:
    p, files = planted
    _redact(p, "--yes")
    key = load_or_create_key(gate_dirs["data"])
    f = Finding(0, len(p.token), "github-token", "github.token", Tier.HIGH)
    tag = placeholder(f, p.token, key)
    text = files["claude-code"][0].read_text()
    assert tag in text
    assert (
        "[gate: withheld a value from .env (rule Read(./.env)" in text
        or "[gate: withheld a value from .env" in text
    )


def test_restore_brings_back_every_byte(planted, gate_dirs: dict[str, Path]) -> None:
    p, _ = planted
    home_before, project_before = tree(p.home), tree(p.project)
    code, out, _ = _redact(p, "--yes")
    assert code == 0 and tree(p.home) != home_before
    backup_id = out.split("backed up as ")[1].split(":")[0]
    top = gate_dirs["data"] / "history-backups"
    assert top.stat().st_mode & 0o777 == 0o700
    assert all(f.stat().st_mode & 0o777 == 0o600 for f in (top / backup_id).iterdir())
    code, out, err = invoke("history", "restore", backup_id)
    assert code == 0, err
    assert tree(p.home) == home_before and tree(p.project) == project_before


def test_a_tampered_backup_is_refused(planted, gate_dirs: dict[str, Path]) -> None:
    p, files = planted
    _redact(p, "--yes", "--agent", "aider")
    (backup_id,) = json.loads(invoke("history", "restore", "--list", "--json")[1])["backups"]
    copy = sorted((gate_dirs["data"] / "history-backups" / backup_id).glob("0*"))[0]
    copy.write_bytes(b"something else")
    redacted = files["aider"][0].read_bytes()
    code, _, err = invoke("history", "restore", backup_id)
    assert code == 1 and "does not match its sha256" in err and str(copy) in err
    assert files["aider"][0].read_bytes() == redacted
    code, _, err = invoke("history", "restore", "../../etc")
    assert code == 1 and "no backup" in err


def test_dry_run_and_no_changes_without_consent(planted) -> None:
    p, _ = planted
    before = tree(p.home)
    code, out, _ = _redact(p, "--dry-run")
    assert code == 0 and "opencode.db" in out and tree(p.home) == before
    code, out, err = invoke("history", "redact", "--home", str(p.home), stdin="n\n")
    assert code == 1 and "Aborted" in out + err and tree(p.home) == before
    code, _, err = _redact(p, "--json")
    assert code == 1 and "--yes" in err and tree(p.home) == before


def test_no_backup(planted, gate_dirs: dict[str, Path]) -> None:
    p, _ = planted
    code, out, _ = _redact(p, "--yes", "--no-backup")
    assert code == 0 and "backed up" not in out
    assert not (gate_dirs["data"] / "history-backups").exists()


def test_a_store_in_use_is_skipped_and_named(planted) -> None:
    """An agent writing its transcript right now keeps it: the store is skipped with the
    process that holds it, whether it holds the file or only a database's WAL."""
    p, files = planted
    jsonl, db = files["claude-code"][0], files["opencode"][0]
    hold = (
        "import sys, time; fs = [open(a, 'rb') for a in sys.argv[1:]];"
        " print('ready', flush=True); time.sleep(60)"
    )
    wal = Path(f"{db}-wal")
    wal.touch()
    proc = subprocess.Popen(
        [sys.executable, "-c", hold, str(jsonl), str(wal)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        before = (jsonl.read_bytes(), db.read_bytes())
        code, out, _ = _redact(p, "--yes")
        assert code == 0
        assert f"skipped {jsonl}: open in python" in out and f"pid {proc.pid}" in out
        assert f"skipped {db}: open in" in out
        assert (jsonl.read_bytes(), db.read_bytes()) == before
    finally:
        proc.kill()
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    # Everything else was redacted.
    assert p.token not in files["codex"][0].read_text()


@pytest.mark.parametrize("name", ["deploy with {t}", "{t}", "use {t}, then {t} again"])
def test_copilot_workspace_yaml_stays_yaml(planted, name: str) -> None:
    """Copilot names a session after its first prompt: a pasted token sits in a plain YAML
    scalar, where the placeholder's ': ' and ' #' would end it; it is written quoted."""
    import yaml

    p, _ = planted
    ws = next(p.home.glob(".copilot/session-state/*/workspace.yaml"))
    ws.write_text(f"id: x\ncwd: {p.project}\nname: {name.format(t=p.token)}\nfork_count: 0\n")
    before = yaml.safe_load(ws.read_text())
    code, out, _ = _redact(p, "--yes", "--agent", "copilot")
    assert code == 0, out
    after = yaml.safe_load(ws.read_text())
    assert p.token not in ws.read_text()
    assert {k: v for k, v in after.items() if k != "name"} == {
        k: v for k, v in before.items() if k != "name"
    }
    assert after["name"].startswith(name.split("{t}")[0]) and "[gate: redacted" in after["name"]
