"""Remembered answers skip the question on later turns; the dataset stays local and private."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from ask.ask_kit import AskingGate, env_turn, github_token
from gate.cli import cli
from messages import conversation, tool_turn


def _lines(data: Path, kind: str = "send-secret") -> list[dict[str, object]]:
    path = data / "decisions" / "dataset" / f"{kind}.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_remembered_approval_answers_the_next_turn_without_asking(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking()
    token = github_token()
    body = env_turn(gate_dirs["project"], token)
    sent = g.send(body)
    [q] = g.wait_pending()
    assert CliRunner().invoke(cli, ["approve", q["id"], "--remember", "project"]).exit_code == 0
    sent.wait()
    body["messages"] += [
        {"role": "assistant", "content": "ok"},
        {"role": "user", "content": "and now?"},
    ]
    again = g.send(body).wait(10)  # parked would time out here: nobody answers it
    assert again.error is None and g.control().pending() == []
    assert token in g.provider.seen[-1].body.decode()
    memory = g.data / "decisions" / "memory.json"
    assert memory.stat().st_mode & 0o777 == 0o600 and token not in memory.read_text()
    [entry] = json.loads(memory.read_text())["entries"]
    assert (entry["kind"], entry["scope"], entry["question_id"]) == (
        "github-token",
        "project",
        q["id"],
    )
    person, remembered = _lines(g.data)
    assert (person["by"], person["remember"]) == ("person", "project")
    assert (remembered["by"], remembered["answer"]) == ("memory", "approve")
    listed = CliRunner().invoke(cli, ["decisions", "list", "--json"])
    assert listed.exit_code == 0 and "project" in listed.output and token not in listed.output


def test_an_answer_given_once_is_asked_again(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking()
    body = env_turn(gate_dirs["project"], github_token())
    sent = g.send(body)
    g.control().answer(g.wait_pending()[0]["id"], "redact", "once")
    sent.wait()
    sent = g.send(body)
    [q] = g.wait_pending()  # asked again: "once" remembers nothing
    g.control().answer(q["id"], "redact")
    sent.wait()


def test_dataset_lines_hold_the_question_as_shown_and_never_leave(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking()
    token = github_token()
    sent = g.send(env_turn(gate_dirs["project"], token))
    [q] = g.wait_pending()
    g.control().answer(q["id"], "redact")
    sent.wait()
    folder = g.data / "decisions" / "dataset"
    path = folder / "send-secret.jsonl"
    assert path.stat().st_mode & 0o777 == 0o600
    assert folder.stat().st_mode & 0o777 == 0o700
    assert (g.data / "decisions").stat().st_mode & 0o777 == 0o700
    [line] = _lines(g.data)
    assert {k: line[k] for k in ("id", "kind", "answer", "remember", "by")} == {
        "id": q["id"],
        "kind": "send-secret",
        "answer": "redact",
        "remember": "session",
        "by": "person",
    }
    assert line["findings"] == q["findings"] and line["request"] == q["request"]
    assert line["request"]["project_root"] == str(gate_dirs["project"])  # type: ignore[index]
    assert isinstance(line["answered_at"], float) and token not in path.read_text()
    # Gate makes no request of its own, and nothing from the dataset is ever forwarded.
    g.send(conversation(str(gate_dirs["project"]))).wait()
    forwarded = b"".join(s.body for s in g.provider.seen).decode()
    assert all(s.path.startswith("/v1/messages") for s in g.provider.seen)
    context = line["findings"][0]["context"]  # type: ignore[index]
    assert q["id"] not in forwarded and context not in forwarded
    assert line["findings"][0]["preview"] not in forwarded  # type: ignore[index]


def test_the_dataset_can_be_turned_off(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking(record_dataset=False, mode="never")
    g.send(env_turn(gate_dirs["project"], github_token())).wait()
    assert not (g.data / "decisions" / "dataset").exists()


def test_an_ask_rule_on_a_file_makes_a_send_denied_content_question(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("ask:\n  - Read(./docs/customers.csv)\n")
    g = asking()
    rows = "name,plan\nalice,gold\nbob,silver\n"
    body = conversation(
        str(project),
        tool_turn("toolu_1", "Read", {"file_path": f"{project}/docs/customers.csv"}, rows),
    )
    sent = g.send(body)
    [q] = g.wait_pending()
    assert q["kind"] == "send-denied-content"
    [f] = q["findings"]
    assert f["rule"] == "Read(./docs/customers.csv)" and f["tool"] == "Read"
    assert f["file"] == f"{project}/docs/customers.csv" and "alice" not in json.dumps(q)
    g.control().answer(q["id"], "approve")
    sent.wait()
    assert "alice,gold" in g.provider.seen[-1].body.decode()
    [line] = _lines(g.data, "send-denied-content")
    assert line["answer"] == "approve"


def test_a_remembered_block_refuses_the_next_turn_without_asking(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking()
    body = env_turn(gate_dirs["project"], github_token())
    sent = g.send(body)
    [q] = g.wait_pending()
    g.control().answer(q["id"], "block", "always")
    assert "the user blocked it" in str(sent.wait().error)
    again = g.send(body).wait(10)
    assert "a remembered answer blocks it" in str(again.error)
    assert g.provider.seen == [] and g.control().pending() == []
    assert [line["by"] for line in _lines(g.data)] == ["person", "memory"]


def test_approving_a_withheld_result_asks_again_about_a_secret_inside_it(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("ask:\n  - Read(./notes.txt)\n")
    g = asking()
    token = github_token()
    body = conversation(
        str(project),
        tool_turn(
            "toolu_1", "Read", {"file_path": f"{project}/notes.txt"}, f"deploy with {token}\n"
        ),
    )
    sent = g.send(body)
    [first] = g.wait_pending()
    assert first["kind"] == "send-denied-content" and token not in json.dumps(first)
    g.control().answer(first["id"], "approve")
    second = g.wait_pending()
    assert [q["kind"] for q in second] == ["send-secret"]  # the file's content, now visible
    g.control().answer(second[0]["id"], "redact")
    sent.wait()
    forwarded = g.provider.seen[-1].body.decode()
    assert "deploy with [gate: redacted github-token" in forwarded and token not in forwarded
