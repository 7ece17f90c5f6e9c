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
    return subprocess.run([sys.executable, "-m", "gate", "scan", *args], input=stdin,
                          capture_output=True, text=True, timeout=60, check=False)


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
    assert lines[0]["text"][f["start"]:f["end"]] == token and f["tier"] == "high"
    bad = _scan("--jsonl", stdin='{"id": 1}\n')
    assert bad.returncode == 1 and "stdin line 1" in bad.stderr
