"""`gate decisions list|forget` through the real CLI, on a real memory file."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from conftest import fake_secret
from gate.ask.memory import DecisionMemory, memory_path
from gate.cli import cli

KEY = b"k" * 32


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def _remember(data: Path) -> tuple[DecisionMemory, list[str]]:
    mem = DecisionMemory(data, KEY)
    ids = []
    for i, (scope, project) in enumerate(
        [("project", "/src/app"), ("always", None), ("session", None)]
    ):
        fp = mem.fingerprint(fake_secret(), "github-token")
        entry = mem.remember(
            fp,
            "github-token",
            ("approve", "block", "redact")[i],
            scope,
            session="s1",
            project=project or "/src/app",
            question_id=f"q{i}",
        )
        assert entry is not None
        ids.append(entry.id)
    return mem, ids


def test_list_shows_persisted_answers(gate_dirs: dict[str, Path]) -> None:
    _, (proj, always, session) = _remember(gate_dirs["data"])
    code, out, _ = invoke("decisions", "list")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["ID", "SCOPE", "ANSWER", "KIND", "EXPIRES", "WHERE"]
    assert lines[1].split()[:4] == [proj, "project", "approve", "github-token"]
    assert lines[1].endswith("/src/app")
    assert lines[2].split()[:3] == [always, "always", "block"] and lines[2].endswith("everywhere")
    assert session not in out  # session answers live only in the running gate
    code, out, _ = invoke("decisions", "list", "--json")
    listed = json.loads(out)["decisions"]
    assert [d["id"] for d in listed] == [proj, always]
    assert set(listed[0]) >= {"fingerprint", "kind", "answer", "scope", "project", "expires"}


def test_list_when_nothing_is_remembered() -> None:
    assert invoke("decisions", "list") == (0, "no remembered decisions\n", "")
    code, out, _ = invoke("decisions", "list", "--json")
    assert code == 0
    assert json.loads(out) == {"ok": True, "decisions": []}


def test_forget_one_and_a_running_memory_asks_again(gate_dirs: dict[str, Path]) -> None:
    mem, (proj, always, _) = _remember(gate_dirs["data"])
    code, out, _ = invoke("decisions", "forget", proj)
    assert (code, out) == (0, f"forgot {proj}\n")
    assert [e.id for e in mem.entries() if e.scope != "session"] == [always]
    code, out, _ = invoke("decisions", "forget", always, "--json")
    assert json.loads(out) == {"ok": True, "forgotten": always}
    assert json.loads(memory_path(gate_dirs["data"]).read_text())["entries"] == []


def test_forget_an_unknown_id_fails_clearly(gate_dirs: dict[str, Path]) -> None:
    _remember(gate_dirs["data"])
    code, _, err = invoke("decisions", "forget", "0123456789")
    assert code == 1
    assert "no remembered decision '0123456789'" in err and "gate decisions list" in err


def test_a_newer_memory_file_is_refused_untouched(gate_dirs: dict[str, Path]) -> None:
    path = memory_path(gate_dirs["data"])
    path.parent.mkdir(parents=True)
    path.write_text('{"schemaVersion": 7, "entries": []}')
    code, _, err = invoke("decisions", "list")
    assert code == 3 and str(path) in err and "upgrade gate" in err  # cannot read it
    assert path.read_text() == '{"schemaVersion": 7, "entries": []}'
