"""Decision memory on real files: scopes, expiry, forget, persistence, no value at rest."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from loguru import logger

from conftest import fake_secret
from gate.ask.memory import DecisionMemory, memory_path
from gate.ask.memory_file import MemoryFile
from gate.errors import StateError

KEY = b"k" * 32
HERE = {"session": "run-1", "project": "/src/app"}


@pytest.fixture
def data(gate_dirs: dict[str, Path]) -> Path:
    return gate_dirs["data"]


def test_fingerprint_is_keyed_by_install_and_kind(data: Path) -> None:
    value = fake_secret("sk-")
    mem = DecisionMemory(data, KEY)
    fp = mem.fingerprint(value, "openai-key")
    assert fp == DecisionMemory(data, KEY).fingerprint(value, "openai-key")
    assert fp != mem.fingerprint(value, "generic-secret")
    assert fp != DecisionMemory(data, b"x" * 32).fingerprint(value, "openai-key")
    assert len(fp) == 64 and value not in fp


def test_once_stores_nothing(data: Path) -> None:
    mem = DecisionMemory(data, KEY)
    assert mem.remember("f" * 64, "k", "approve", "once", question_id="q1", **HERE) is None
    assert mem.lookup("f" * 64, "k", **HERE) is None
    assert not memory_path(data).exists()


def test_session_matches_same_session_in_this_process_only(data: Path) -> None:
    mem = DecisionMemory(data, KEY)
    entry = mem.remember("f" * 64, "k", "redact", "session", question_id="q1", **HERE)
    assert entry is not None and entry.session == "run-1" and entry.project is None
    assert mem.lookup("f" * 64, "k", **HERE) == entry
    assert mem.lookup("f" * 64, "k", session="run-1", project="/elsewhere") == entry
    assert mem.lookup("f" * 64, "k", session="run-2", project="/src/app") is None
    assert mem.lookup("f" * 64, "other-kind", **HERE) is None
    assert not memory_path(data).exists()
    assert DecisionMemory(data, KEY).lookup("f" * 64, "k", **HERE) is None


def test_project_and_always_persist_across_restarts(data: Path) -> None:
    mem = DecisionMemory(data, KEY)
    proj = mem.remember("a" * 64, "k", "approve", "project", question_id="q1", **HERE)
    always = mem.remember("b" * 64, "k", "block", "always", question_id="q2", **HERE)
    again = DecisionMemory(data, KEY)
    assert again.lookup("a" * 64, "k", session=None, project="/src/app") == proj
    assert again.lookup("a" * 64, "k", session=None, project="/src/other") is None
    assert again.lookup("a" * 64, "k", session=None, project=None) is None
    assert again.lookup("b" * 64, "k", session="x", project=None) == always
    assert {e.id for e in again.entries()} == {proj.id, always.id}  # type: ignore[union-attr]


def test_narrowest_scope_wins_and_a_new_answer_replaces_the_old(data: Path) -> None:
    mem = DecisionMemory(data, KEY)
    mem.remember("a" * 64, "k", "approve", "always", question_id="q1", **HERE)
    mem.remember("a" * 64, "k", "block", "project", question_id="q2", **HERE)
    assert mem.lookup("a" * 64, "k", **HERE).answer == "block"  # type: ignore[union-attr]
    mem.remember("a" * 64, "k", "redact", "project", question_id="q3", **HERE)
    assert mem.lookup("a" * 64, "k", **HERE).answer == "redact"  # type: ignore[union-attr]
    assert [e.answer for e in mem.entries()] == ["approve", "redact"]


def test_project_scope_without_a_project_is_not_remembered(data: Path) -> None:
    mem = DecisionMemory(data, KEY)
    assert (
        mem.remember(
            "a" * 64, "k", "approve", "project", session="s", project=None, question_id="q1"
        )
        is None
    )
    assert mem.entries() == []


def test_bad_answer_or_scope_is_an_error(data: Path) -> None:
    mem = DecisionMemory(data, KEY)
    with pytest.raises(ValueError, match="answer must be one of"):
        mem.remember("a" * 64, "k", "allow", "always", question_id="q", **HERE)
    with pytest.raises(ValueError, match="forever"):
        mem.remember("a" * 64, "k", "approve", "forever", question_id="q", **HERE)


def test_expired_entries_are_not_used_and_dropped_from_the_file(data: Path) -> None:
    old = DecisionMemory(data, KEY, ttl_days=-1)
    assert old.remember("a" * 64, "k", "approve", "always", question_id="q", **HERE)
    assert old.remember("b" * 64, "k", "approve", "session", question_id="q", **HERE)
    assert old.lookup("a" * 64, "k", **HERE) is None
    assert old.lookup("b" * 64, "k", **HERE) is None
    assert json.loads(memory_path(data).read_text())["entries"] == []
    fresh = DecisionMemory(data, KEY, ttl_days=90)
    entry = fresh.remember("c" * 64, "k", "block", "always", question_id="q", **HERE)
    assert entry is not None
    assert 89.9 * 86400 < entry.expires - entry.created < 90.1 * 86400


def test_file_is_owner_only_atomic_and_never_holds_the_value(data: Path) -> None:
    value = fake_secret("ghp_")
    mem = DecisionMemory(data, KEY)
    for scope in ("session", "project", "always"):
        mem.remember(
            mem.fingerprint(value, "github-token"),
            "github-token",
            "approve",
            scope,
            question_id="q-" + scope,
            **HERE,
        )
    path = memory_path(data)
    raw = path.read_bytes()
    assert value.encode() not in raw and value[4:].encode() not in raw
    assert json.loads(raw)["schemaVersion"] == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert sorted(os.listdir(path.parent)) == ["memory.json", "memory.lock"]  # no temp file
    assert stat.S_IMODE((path.parent / "memory.lock").stat().st_mode) == 0o600


def test_forget_drops_one_entry_by_id(data: Path) -> None:
    mem = DecisionMemory(data, KEY)
    kept = mem.remember("a" * 64, "k", "approve", "always", question_id="q1", **HERE)
    gone = mem.remember("b" * 64, "k", "approve", "project", question_id="q2", **HERE)
    sess = mem.remember("c" * 64, "k", "approve", "session", question_id="q3", **HERE)
    assert gone and kept and sess
    assert mem.forget(gone.id) and mem.forget(sess.id)
    assert not mem.forget(gone.id) and not mem.forget("nope")
    assert [e.id for e in mem.entries()] == [kept.id]
    assert [e["id"] for e in json.loads(memory_path(data).read_text())["entries"]] == [kept.id]


def test_a_running_memory_sees_a_forget_made_by_another_process(data: Path) -> None:
    running = DecisionMemory(data, KEY)
    entry = running.remember("a" * 64, "k", "approve", "always", question_id="q", **HERE)
    assert entry is not None
    other = MemoryFile(memory_path(data))  # what `gate decisions forget` uses
    other.update(lambda entries: [e for e in entries if e.id != entry.id])
    assert running.lookup("a" * 64, "k", **HERE) is None
    running.remember("b" * 64, "k", "block", "always", question_id="q2", **HERE)
    assert [e.fingerprint for e in MemoryFile(memory_path(data)).entries()] == ["b" * 64]


def test_corrupt_file_is_moved_aside_with_a_warning_naming_both_paths(data: Path) -> None:
    path = memory_path(data)
    path.parent.mkdir(parents=True)
    path.write_text("{not json")
    lines: list[str] = []
    sink = logger.add(lines.append, level="WARNING", format="{message}")
    try:
        mem = DecisionMemory(data, KEY)
    finally:
        logger.remove(sink)
    aside = [p for p in path.parent.iterdir() if p.name.startswith("memory.json.corrupt-")]
    assert len(aside) == 1 and aside[0].read_text() == "{not json"
    assert not path.exists()
    assert str(path) in lines[0] and str(aside[0]) in lines[0]
    assert mem.remember("a" * 64, "k", "approve", "always", question_id="q", **HERE)


@pytest.mark.parametrize(
    "bad",
    [
        {"schemaVersion": 1, "entries": [{"id": "x"}]},
        {
            "schemaVersion": 1,
            "entries": [
                {
                    "id": "x",
                    "fingerprint": "f",
                    "kind": "k",
                    "answer": "allow",
                    "scope": "always",
                    "session": None,
                    "project": None,
                    "created": 0,
                    "expires": 9e12,
                }
            ],
        },
        {"entries": []},
        ["a list"],
    ],
)
def test_malformed_content_counts_as_corrupt(data: Path, bad: object) -> None:
    path = memory_path(data)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(bad))
    assert DecisionMemory(data, KEY).entries() == []
    assert any(p.name.startswith("memory.json.corrupt-") for p in path.parent.iterdir())


def test_newer_schema_is_refused_and_left_untouched(data: Path) -> None:
    path = memory_path(data)
    path.parent.mkdir(parents=True)
    text = json.dumps({"schemaVersion": 2, "entries": []})
    path.write_text(text)
    with pytest.raises(StateError, match="newer") as err:
        DecisionMemory(data, KEY)
    assert str(path) in err.value.diagnostics()
    assert path.read_text() == text


def test_newer_schema_appearing_later_means_asking_not_crashing(data: Path) -> None:
    mem = DecisionMemory(data, KEY)
    assert mem.remember("a" * 64, "k", "approve", "always", question_id="q", **HERE)
    memory_path(data).write_text(json.dumps({"schemaVersion": 9, "entries": []}))
    assert mem.lookup("a" * 64, "k", **HERE) is None
    assert mem.remember("b" * 64, "k", "approve", "always", question_id="q", **HERE) is None
    assert json.loads(memory_path(data).read_text())["schemaVersion"] == 9


def test_concurrent_remembers_lose_nothing_and_readers_see_whole_files(data: Path) -> None:
    mem = DecisionMemory(data, KEY)
    path = memory_path(data)
    stop = threading.Event()
    torn: list[str] = []

    def read() -> None:
        while not stop.is_set():
            if path.exists():
                try:
                    json.loads(path.read_bytes())
                except ValueError as exc:
                    torn.append(str(exc))

    def write(n: int) -> None:
        for i in range(25):
            mem.remember(f"{n:02d}{i:062d}", "k", "approve", "always", question_id="q", **HERE)

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in writers:
        t.start()
    for t in writers:
        t.join()
    stop.set()
    reader.join()
    assert torn == []
    assert len(DecisionMemory(data, KEY).entries()) == 200


def test_two_processes_remembering_at_once_lose_nothing(data: Path) -> None:
    script = (
        "import sys; from pathlib import Path; from gate.ask.memory import DecisionMemory\n"
        "m = DecisionMemory(Path(sys.argv[1]), b'k' * 32)\n"
        "for i in range(40):\n"
        "    m.remember(f'{sys.argv[2]}{i:063d}', 'k', 'approve', 'always', session=None,"
        " project=None, question_id='q')\n"
    )
    procs = [subprocess.Popen([sys.executable, "-c", script, str(data), n]) for n in "ab"]
    assert [p.wait(timeout=60) for p in procs] == [0, 0]
    assert len(DecisionMemory(data, KEY).entries()) == 80


def test_a_change_that_repeats_the_files_signature_is_still_seen(data: Path) -> None:
    """Another process may replace memory.json within one clock tick with a file of the same
    size whose inode was just freed: (inode, mtime, size) then repeat. A signature is only
    trusted once it was read a second after its mtime, so such a change is read."""
    mem = DecisionMemory(data, KEY)
    mem.remember("f" * 64, "k", "approve", "project", question_id="q1", **HERE)
    assert mem.lookup("f" * 64, "k", **HERE) is not None  # read and indexed
    path = memory_path(data)
    before = path.stat()
    # The same inode, size and mtime, other content: another project's answer.
    with path.open("r+b") as f:
        text = f.read()
        f.seek(0)
        f.write(text.replace(b"/src/app", b"/src/zzz"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns, after.st_size) == (
        before.st_ino,
        before.st_mtime_ns,
        before.st_size,
    )
    assert mem.lookup("f" * 64, "k", **HERE) is None
