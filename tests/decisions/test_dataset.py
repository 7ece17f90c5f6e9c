"""The local decision dataset: one JSON line per answered question, owner-only files."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path

import pytest

from gate.ask.dataset import Dataset, dataset_dir

RECORD = {
    "id": "q1",
    "kind": "send-secret",
    "answer": "redact",
    "by": "person",
    "findings": [{"kind": "github-token", "preview": "ghp_********abcd"}],
}


def test_append_writes_one_line_per_question_kind(gate_dirs: dict[str, Path]) -> None:
    data = gate_dirs["data"]
    ds = Dataset(data)
    path = ds.append("send-secret", RECORD)
    ds.append("send-secret", {**RECORD, "id": "q2"})
    other = ds.append("send-denied-content", {"id": "q3"})
    assert path == dataset_dir(data) / "send-secret.jsonl"
    assert other == dataset_dir(data) / "send-denied-content.jsonl"
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x["id"] for x in lines] == ["q1", "q2"]
    assert lines[0] == {"schemaVersion": 1, "question": "send-secret", **RECORD}
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    for d in (dataset_dir(data), dataset_dir(data).parent):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700


def test_disabled_dataset_writes_nothing(gate_dirs: dict[str, Path]) -> None:
    assert Dataset(gate_dirs["data"], enabled=False).append("send-secret", RECORD) is None
    assert not (gate_dirs["data"] / "decisions").exists()


@pytest.mark.parametrize("question", ["", "Send-Secret", "../memory", "send secret", "a/b"])
def test_question_kind_is_validated(gate_dirs: dict[str, Path], question: str) -> None:
    with pytest.raises(ValueError, match=r"\[a-z0-9-\]\+"):
        Dataset(gate_dirs["data"]).append(question, RECORD)
    assert not (gate_dirs["data"] / "decisions").exists()


def test_a_loose_existing_file_is_made_owner_only(gate_dirs: dict[str, Path]) -> None:
    ds = Dataset(gate_dirs["data"])
    path = ds.append("send-secret", RECORD)
    assert path is not None
    path.chmod(0o644)
    ds.append("send-secret", RECORD)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_concurrent_appends_never_interleave(gate_dirs: dict[str, Path]) -> None:
    ds = Dataset(gate_dirs["data"])
    big = "x" * 20000  # larger than a pipe buffer: a torn write would show

    def write(n: int) -> None:
        for i in range(20):
            ds.append("send-secret", {"id": f"{n}-{i}", "context": big})

    threads = [threading.Thread(target=write, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = (dataset_dir(gate_dirs["data"]) / "send-secret.jsonl").read_text().splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == sorted(
        f"{n}-{i}" for n in range(6) for i in range(20)
    )
