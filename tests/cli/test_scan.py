"""`gate scan`: files, stdin, JSON and JSONL batch; no secret is ever printed."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

from screen.secrets_corpus import Gen


def _token() -> str:
    return Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")


def _scan(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gate", "scan", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_scan_files_reports_positions_and_masks(tmp_path: Path) -> None:
    token = _token()
    (tmp_path / "deploy.sh").write_text(f"#!/bin/sh\nexport GITHUB_TOKEN={token}\n")
    (tmp_path / "clean.txt").write_text("nothing to see\n")
    proc = _scan(str(tmp_path / "deploy.sh"), str(tmp_path / "clean.txt"))
    assert proc.returncode == 1
    assert proc.stdout.startswith(f"{tmp_path / 'deploy.sh'}:2:21 github-token high ghp_…")
    assert token not in proc.stdout + proc.stderr
    assert _scan(str(tmp_path / "clean.txt")).returncode == 0


def test_scan_json_and_stdin() -> None:
    token = _token()
    proc = _scan("--json", "-", stdin=f"token: {token}\n")
    out = json.loads(proc.stdout)
    assert proc.returncode == 1 and out["findings"][0]["kind"] == "github-token"
    assert token not in proc.stdout


def test_scan_jsonl_batch() -> None:
    token = _token()
    lines = [{"id": "a", "text": f"x = '{token}'"}, {"id": 7, "text": "harmless"}]
    proc = _scan("--jsonl", stdin="\n".join(json.dumps(x) for x in lines) + "\n")
    out = [json.loads(line) for line in proc.stdout.splitlines()]
    assert proc.returncode == 0
    assert out[1] == {"id": 7, "findings": []}
    f = out[0]["findings"][0]
    assert lines[0]["text"][f["start"] : f["end"]] == token and f["tier"] == "high"
    bad = _scan("--jsonl", stdin='{"id": 1}\n')
    assert bad.returncode == 1 and "stdin line 1" in bad.stderr


def _password() -> str:
    return Gen(random.SystemRandom().randrange(1 << 30)).password(16)


def _tree(root: Path, token: str, password: str) -> None:
    (root / "src").mkdir()
    (root / "build").mkdir()
    (root / "src" / "app.env").write_text(f"GITHUB_TOKEN={token}\nDB_PASSWORD={password}\n")
    (root / "build" / "out.env").write_text(f"GITHUB_TOKEN={token}\n")  # ignored directory
    (root / "src" / "debug.log").write_text(f"token={token}\n")  # ignored by pattern
    (root / "src" / "keep.log").write_text(f"token={token}\n")  # re-included by !keep.log
    (root / "src" / "blob.bin").write_bytes(b"\0\1" + token.encode())  # binary: skipped
    (root / ".gitignore").write_text("build/\n*.log\n!keep.log\n")


def _paths(proc: subprocess.CompletedProcess[str]) -> set[str]:
    return {line.split(":", 1)[0] for line in proc.stdout.splitlines()}


def test_scan_directories_honour_gitignore_with_and_without_git(tmp_path: Path) -> None:
    token, password = _token(), _password()
    for name, use_git in (("plain", False), ("repo", True)):
        root = tmp_path / name
        root.mkdir()
        _tree(root, token, password)
        if use_git:
            subprocess.run(["git", "init", "-q", str(root)], check=True)
        proc = _scan(str(root))
        assert proc.returncode == 1, proc.stderr
        assert _paths(proc) == {str(root / "src" / "app.env"), str(root / "src" / "keep.log")}
        assert token not in proc.stdout and password not in proc.stdout


def test_scan_exit_codes_and_tier(tmp_path: Path) -> None:
    clean, mixed = tmp_path / "clean.txt", tmp_path / "mixed.env"
    clean.write_text("nothing to see\n")
    mixed.write_text(f"DB_PASSWORD={_password()}\n")  # a low-tier finding only
    assert _scan(str(clean)).returncode == 0
    assert _scan(str(mixed)).returncode == 1
    assert _scan("--tier", "high", str(mixed)).returncode == 0
    assert _scan("--tier", "medium", str(mixed)).returncode == 2
    assert _scan("--json", "--sarif", str(mixed)).returncode == 2
    missing = _scan(str(tmp_path / "nope.txt"))
    assert missing.returncode == 3 and "nope.txt" in missing.stderr
    unreadable = tmp_path / "bad.json"
    unreadable.write_text("{not json")
    bad = _scan("--baseline", str(unreadable), str(mixed))
    assert bad.returncode == 3 and "bad.json" in bad.stderr


def test_scan_sarif_lists_rules_and_locations_without_values(tmp_path: Path) -> None:
    token = _token()
    f = tmp_path / "deploy.sh"
    f.write_text(f"#!/bin/sh\nexport GITHUB_TOKEN={token}\n")
    proc = _scan("--sarif", str(f))
    doc = json.loads(proc.stdout)
    assert proc.returncode == 1 and doc["version"] == "2.1.0"
    run = doc["runs"][0]
    (result,) = run["results"]
    rule = run["tool"]["driver"]["rules"][result["ruleIndex"]]
    assert rule["id"] == result["ruleId"] == "github.token" and rule["helpUri"].startswith("https")
    region = result["locations"][0]["physicalLocation"]["region"]
    assert (region["startLine"], region["startColumn"]) == (2, 21)
    assert region["endColumn"] - region["startColumn"] == len(token)
    assert result["level"] == "error"
    assert token not in proc.stdout and token[4:-4] not in proc.stdout


def test_scan_baseline_hides_known_findings_and_holds_no_values(tmp_path: Path) -> None:
    token, password = _token(), _password()
    f, base = tmp_path / "app.env", tmp_path / "gate-baseline.json"
    f.write_text(f"GITHUB_TOKEN={token}\nDB_PASSWORD={password}\n")
    assert _scan("--baseline", str(base), "--update-baseline", str(f)).returncode == 0
    saved = base.read_text()
    assert token not in saved and password not in saved and token[4:-4] not in saved
    assert len(json.loads(saved)["findings"]) == 2
    f.write_text(f"# moved down a line\nGITHUB_TOKEN={token}\nDB_PASSWORD={password}\n")
    assert _scan("--baseline", str(base), str(f)).returncode == 0  # known, though moved
    other = _token()
    f.write_text(f"GITHUB_TOKEN={other}\nDB_PASSWORD={password}\n")
    proc = _scan("--baseline", str(base), "--json", str(f))
    assert proc.returncode == 1  # a new value under the same name is a new finding
    assert [r["rule_id"] for r in json.loads(proc.stdout)["findings"]] == ["github.token"]


def test_scan_start_up_imports_no_heavy_module(tmp_path: Path) -> None:
    """`gate scan` of a file starts without the proxy, logging, config or detect-secrets
    modules, and compiles only the patterns of detectors whose keywords it met (start-up
    target: 0.3 s)."""
    (tmp_path / "a.env").write_text(f"PORT=8080\nGITHUB_TOKEN={_token()}\n")
    probe = (
        "import sys, runpy\n"
        "from gate.screen import secrets\n"
        "kept = []\n"
        "load = secrets.load_detectors\n"
        "secrets.load_detectors = lambda: kept.append(load()) or kept[0]\n"
        f"sys.argv = ['gate', 'scan', {str(tmp_path / 'a.env')!r}]\n"
        "try:\n    runpy.run_module('gate', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "lazy = [d.patterns for d in kept[0] if type(d.patterns).__name__ == 'Compiled']\n"
        "done = sum(p._compiled is not None for p in lazy)\n"
        "heavy = ('mitmproxy', 'loguru', 'asyncio', 'detect_secrets', 'gate.config', 'wcmatch')\n"
        "print([m for m in heavy if m in sys.modules], len(lazy), done)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False
    )
    loaded, lazy, compiled = proc.stdout.strip().splitlines()[-1].rsplit(" ", 2)
    assert loaded == "[]", proc.stdout + proc.stderr
    assert int(lazy) > 100 and 0 < int(compiled) < 10, proc.stdout
