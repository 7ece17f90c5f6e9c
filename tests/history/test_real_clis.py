"""Histories written by the real agent CLIs (run headless against the loopback fake model):
scanned, redacted, still resumable by the agent, and restored byte for byte."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from history.kit import holding, invoke, scan_json, tree
from history.real_runs import run

pytestmark = pytest.mark.agent_cli

PROMPT = "Show me what is in .env; my deploy token is {secret}"


def _resume_claude(args: list[str]) -> list[str]:
    return ["--continue", *args]


def _resume_codex(args: list[str]) -> list[str]:
    i = args.index("exec")
    return [*args[: i + 1], "resume", "--last", *args[i + 1 :]]


def _resume_flag(*flags: str) -> Callable[[list[str]], list[str]]:
    return lambda args: [*args, *flags]


RESUME: dict[str, Callable[[list[str]], list[str]] | None] = {
    "claude-code": _resume_claude,
    "codex": _resume_codex,
    "opencode": lambda args: [args[0], "--continue", *args[1:]],
    "gemini-cli": _resume_flag("--resume", "latest"),
    "copilot": _resume_flag("--continue"),
    "aider": None,
}


@pytest.mark.parametrize("agent", list(RESUME))
def test_a_real_agents_history(
    agent: str, tmp_path: Path, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run(agent, tmp_path / "run", PROMPT)
    if first is None:
        pytest.skip(f"{agent} is not installed")
    monkeypatch.chdir(first.project)
    assert holding(first.home, first.secret) or holding(first.project, first.secret)
    code, doc = scan_json(first.home)
    assert code == 1 and doc["copies"] >= 1
    found = {g["preview"][-4:] for g in doc["groups"]}
    assert first.secret[-4:] in found
    places = {f["place"] for g in doc["groups"] for f in g["findings"]}
    assert places & {"user-text", "tool-result", "prompt-log"}
    home_before, project_before = tree(first.home), tree(first.project)

    code, out, err = invoke("history", "redact", "--home", str(first.home), "--yes")
    assert code == 0, out + err
    assert holding(first.home, first.secret) == []
    assert holding(first.project, first.secret) == []
    for db in [*first.home.rglob("*.db"), *first.home.rglob("*.sqlite")]:
        con = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True)
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        con.close()

    resume = RESUME[agent]
    if resume is not None:
        again = run(agent, tmp_path / "run", "go on", edit=resume, secret=first.secret)
        assert again is not None
        sent = b"".join(again.bodies)
        # The agent read its redacted session back and sent it on: placeholders, no secret.
        assert b"[gate: " in sent, f"{agent} did not resume the redacted session"
        assert first.secret.encode() not in sent

    (backup_id,) = invoke("history", "restore", "--list")[1].split()
    code, out, err = invoke("history", "restore", backup_id)
    assert code == 0, err
    restored = [line.removeprefix("restored ") for line in out.splitlines()]
    assert restored
    for path in restored:
        top = first.home if Path(path).is_relative_to(first.home) else first.project
        before = home_before if top == first.home else project_before
        rel = str(Path(path).relative_to(top))
        assert tree(top)[rel] == before[rel], rel
    if resume is None:
        assert tree(first.home) == home_before and tree(first.project) == project_before
