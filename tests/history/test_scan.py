"""`gate history scan` over every agent's store: every planted copy found, described, and
never printed in clear."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from history.builders import BUILDERS, every_agent, plant
from history.kit import invoke, scan_json


@pytest.fixture
def planted(tmp_path: Path, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch):
    p, files = every_agent(tmp_path / "user")
    monkeypatch.chdir(p.project)  # Aider keeps its history in the project
    return p, files


def test_every_store_of_every_agent_is_found(planted) -> None:
    p, files = planted
    code, doc = scan_json(p.home)
    assert code == 1
    seen: dict[str, set[str]] = {}
    for g in doc["groups"]:
        for f in g["findings"]:
            seen.setdefault(f["store"], set()).add(g["fingerprint"])
    for agent, paths in files.items():
        for path in paths:
            assert str(path) in seen, f"{agent}: nothing found in {path}"
    # Two values in all: one token, one .env value, each grouped once across all agents.
    assert doc["secrets"] == 2
    agents = {a for g in doc["groups"] for a in g["agents"]}
    assert agents == set(BUILDERS)


def test_output_never_holds_a_value(planted) -> None:
    p, _ = planted
    for args in ([], ["--json"]):
        code, out, err = invoke("history", "scan", "--home", str(p.home), *args)
        assert code == 1
        assert p.token not in out + err and p.denied not in out + err
        # Nor most of it: the preview keeps four characters at each end.
        assert p.token[4:-4] not in out and p.denied[4:-4] not in out


def test_where_each_copy_sat(planted) -> None:
    p, _ = planted
    _, doc = scan_json(p.home)
    rows = [
        (f["agent"], f["place"], f["tool"], Path(f["store"]).name)
        for g in doc["groups"]
        for f in g["findings"]
    ]
    expected = [
        ("claude-code", "tool-result", "Read", "f3ae287c-4e09-4fb1-9e7f-205a0513aa8c.jsonl"),
        ("claude-code", "user-text", None, "f3ae287c-4e09-4fb1-9e7f-205a0513aa8c.jsonl"),
        ("claude-code", "file-backup", None, "0123456789abcdef@v1"),
        ("claude-code", "prompt-log", None, "history.jsonl"),
        (
            "codex",
            "tool-result",
            "exec_command",
            "rollout-2026-11-21T09-00-00-01a2333a-458b-7e32-a699-8d1ae9c3a0df.jsonl",
        ),
        ("opencode", "tool-result", "read", "opencode.db"),
        ("opencode", "user-text", None, "opencode.db"),
        ("copilot", "tool-result", "bash", "events.jsonl"),
        ("hermes", "tool-result", "read_file", "state.db"),
        ("gemini-cli", "tool-result", "read_file", "session-2026-11-23T10-00-4fbd61c8.jsonl"),
        ("aider", "user-text", None, ".aider.chat.history.md"),
        ("aider", "prompt-log", None, ".aider.input.history"),
    ]
    for row in expected:
        assert row in rows, row
    claude = [
        f
        for g in doc["groups"]
        for f in g["findings"]
        if f["agent"] == "claude-code" and f["place"] == "tool-result"
    ]
    # The tool result and its toolUseResult duplicate are both copies.
    assert {f["at"].split(" ", 2)[2].split(".")[1].split("[")[0] for f in claude} == {
        "message",
        "toolUseResult",
    }
    assert all(f["session"] == "f3ae287c-4e09-4fb1-9e7f-205a0513aa8c" for f in claude)
    assert all(f["project"] == str(p.project) and f["title"] == "Deploy the app" for f in claude)
    codex = [f for g in doc["groups"] for f in g["findings"] if "rollout-2026" in f["store"]]
    # The original items a compacted line keeps are copies too.
    assert any("replacement_history" in f["at"] for f in codex)
    copilot = [
        f
        for g in doc["groups"]
        for f in g["findings"]
        if f["agent"] == "copilot" and f["store"].endswith("events.jsonl")
    ]
    assert {f["title"] for f in copilot} == {"Deploy it"}


def test_a_denied_value_is_named_by_its_file(planted) -> None:
    p, _ = planted
    _, doc = scan_json(p.home)
    denied = next(g for g in doc["groups"] if g["source"])
    assert denied["source"] == str(p.project / ".env")
    token = next(g for g in doc["groups"] if not g["source"])
    assert token["kind"] == "github-token" and token["tier"] == "high"


def test_filters(planted, tmp_path: Path) -> None:
    p, _ = planted
    _, doc = scan_json(p.home, "--agent", "codex")
    assert {a for g in doc["groups"] for a in g["agents"]} == {"codex"}
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, doc = scan_json(p.home, "--project", str(elsewhere))
    assert doc["copies"] == 0 and code == 0
    _, doc = scan_json(p.home, "--project", str(p.project))
    assert {f["project"] for g in doc["groups"] for f in g["findings"]} == {str(p.project)}
    # Stores untouched for a day hold nothing newer than an hour ago.
    old = time.time() - 86400
    for f in [*p.home.rglob("*"), *p.project.rglob("*")]:
        os.utime(f, (old, old))
    code, doc = scan_json(p.home, "--since", "1h")
    assert doc["stores"] == 0


def test_clean_history_exits_0(tmp_path: Path, gate_dirs: dict[str, Path]) -> None:
    p = plant(tmp_path / "user")
    code, out, _ = invoke("history", "scan", "--home", str(p.home))
    assert code == 0 and "no secrets found" in out


@pytest.mark.parametrize(
    "damage",
    [b'{"type": "user", "message": {"content": "tok', b"\xff\xfe not utf-8 \x00", b"[1, 2"],
)
def test_damaged_lines_are_still_screened(
    tmp_path: Path, gate_dirs: dict[str, Path], damage: bytes
) -> None:
    """A torn last line (the agent was writing) or garbage still gets screened as text,
    and the scan does not stop at it."""
    p, files = every_agent(tmp_path / "user")
    path = files["claude-code"][0]
    with open(path, "ab") as f:
        f.write(damage + f" {p.token}".encode() + b"\n")
    _, doc = scan_json(p.home, "--agent", "claude-code")
    lines = [f["at"] for g in doc["groups"] for f in g["findings"] if f["store"] == str(path)]
    assert f"line {len(path.read_bytes().splitlines())}" in lines


def test_a_token_split_across_json_escapes_is_found(
    tmp_path: Path, gate_dirs: dict[str, Path]
) -> None:
    """A value written \\u-escaped (an agent that escapes non-ASCII or '/') is still one
    value to the scan: strings are screened decoded, not as raw bytes."""
    p = plant(tmp_path / "user")
    escaped = "".join(f"\\u{ord(c):04x}" for c in p.token)
    path = p.home / ".claude" / "projects" / "-x" / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text('{"type":"user","message":{"role":"user","content":"' + escaped + '"}}\n')
    _, doc = scan_json(p.home)
    assert doc["copies"] == 1, json.dumps(doc)


def test_worker_processes_find_the_same(planted, gate_dirs: dict[str, Path]) -> None:
    """A large history is scanned by one process per core: the same findings."""
    from gate.history.readers import Env
    from gate.history.session import run

    p, _ = planted
    env = Env(p.home, {}, (p.project,))
    one = run(env, gate_dirs["data"], jobs=1)
    two = run(env, gate_dirs["data"], jobs=2, parallel_bytes=0)

    def key(r) -> list[tuple[str, str, str]]:
        return sorted((str(f.finding.store), f.finding.where.at, f.finding.digest) for f in r.found)

    assert key(one) == key(two) and len(one.found) > 20


def test_aider_logs_in_projects_other_agents_name(
    tmp_path: Path, gate_dirs: dict[str, Path]
) -> None:
    """Aider keeps its log in each project: one that only a Claude Code session names
    (not the current directory) is found too."""
    from history.builders import aider, claude_code

    p = plant(tmp_path / "user")
    claude_code(p)
    aider(p)
    _, doc = scan_json(p.home)  # run from the test's cwd, not the project
    stores = {Path(f["store"]).name for g in doc["groups"] for f in g["findings"]}
    assert {".aider.chat.history.md", ".aider.input.history"} <= stores


def test_a_denied_file_sent_compressed_and_encoded_is_found(
    tmp_path: Path, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `gzip -c .env | base64` in an old transcript: no value of the file is in it as
    # written or in an indexed encoding, but it decodes to the file.
    import base64
    import gzip

    p = plant(tmp_path / "user")
    monkeypatch.chdir(p.project)
    blob = base64.b64encode(gzip.compress((p.project / ".env").read_bytes())).decode()
    slug = str(p.project).replace("/", "-")
    store = p.home / ".claude" / "projects" / slug / "0b6c3c1e-1f7a-4d55-9a57-5c8f4f1f0a11.jsonl"
    store.parent.mkdir(parents=True)
    row = {
        "sessionId": "0b6c3c1e-1f7a-4d55-9a57-5c8f4f1f0a11",
        "cwd": str(p.project),
        "version": "2.1.197",
        "timestamp": "2026-11-20T10:00:00.000Z",
        "type": "user",
        "uuid": "u1",
        "message": {"role": "user", "content": f"here it is: {blob}"},
    }
    store.write_text(json.dumps(row) + "\n")
    code, doc = scan_json(p.home)
    assert code == 1
    assert [g["source"] for g in doc["groups"]] == [str(p.project / ".env")]
