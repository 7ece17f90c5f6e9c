"""A request with an ask finding is parked until a person answers, through a real gate."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import anthropic
import pytest
from click.testing import CliRunner

from ask.ask_kit import AskingGate, env_turn, github_token
from gate.audit.store import AuditStore
from gate.cli import cli


def _secrets(data: Path) -> list[dict[str, object]]:
    row = next(AuditStore(data / "audit.db").rows(1))
    return [w for w in row["withheld"] if w["kind"] == "secret"]


def test_a_parked_request_is_sent_as_is_once_approved_on_the_cli(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking()
    token = github_token()
    sent = g.send(env_turn(gate_dirs["project"], token))
    [q] = g.wait_pending()
    assert g.provider.seen == []  # parked: nothing left yet
    assert q["kind"] == "send-secret" and q["default"] == "redact"
    [f] = q["findings"]
    assert (f["kind"], f["rule"], f["tool"]) == ("github-token", "github.token", "Bash")
    assert f["preview"].startswith(token[:4]) and f["preview"].endswith(token[-4:])
    assert token not in json.dumps(q)
    assert "GITHUB_TOKEN=" + f["preview"] in f["context"] and "HOME=/home/me" in f["context"]
    listed = CliRunner().invoke(cli, ["pending"])
    assert listed.exit_code == 0 and q["id"] in listed.output and token not in listed.output
    assert "Approval page: http://127.0.0.1:" in listed.output
    assert "Console: http://127.0.0.1:" in listed.output and "/_gate/console?" in listed.output
    as_json = CliRunner().invoke(cli, ["pending", "--json"])
    assert json.loads(as_json.output) == {"ok": True, "pending": [q]}
    done = CliRunner().invoke(cli, ["approve", q["id"]])
    assert done.exit_code == 0, done.output
    assert sent.wait().error is None
    assert token in g.provider.seen[-1].body.decode()
    row = next(AuditStore(g.data / "audit.db").rows(1))
    assert row["verdict"] == "forwarded"  # approved: the agent's bytes, untouched
    [w] = _secrets(g.data)
    assert w["decision"] == {
        "id": q["id"],
        "question": "send-secret",
        "answer": "approve",
        "by": "person",
    }


@pytest.mark.parametrize("answer", ["redact", "block"])
def test_redact_and_block_answered_through_the_control_api(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path], answer: str
) -> None:
    g = asking()
    token = github_token()
    sent = g.send(env_turn(gate_dirs["project"], token))
    [q] = g.wait_pending()
    assert g.control().answer(q["id"], answer) == {
        "ok": True,
        "id": q["id"],
        "answer": answer,
        "remember": "session",  # the scope the answer holds for
        "kind": "send-secret",
    }
    sent.wait()
    if answer == "block":
        assert isinstance(sent.error, anthropic.BadRequestError)
        assert "the user blocked it" in str(sent.error) and q["id"] in str(sent.error)
        assert g.provider.seen == []
        return
    body = g.provider.seen[-1].body.decode()
    assert token not in body and "; not approved by the user]" in body
    assert _secrets(g.data)[0]["decision"]["answer"] == "redact"  # type: ignore[index]


def test_a_second_answer_is_a_conflict_and_an_unknown_id_is_clear(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking()
    sent = g.send(env_turn(gate_dirs["project"], github_token()))
    [q] = g.wait_pending()
    g.control().answer(q["id"], "redact")
    again = CliRunner().invoke(cli, ["approve", q["id"]])
    assert again.exit_code == 1 and "already answered" in again.output
    sent.wait()
    unknown = CliRunner().invoke(cli, ["block", "qffffff"])
    assert unknown.exit_code == 1 and "no pending question 'qffffff'" in unknown.output


@pytest.mark.parametrize(("default", "outcome"), [("redact", "redacted"), ("block", "blocked")])
def test_nobody_answering_applies_the_default(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path], default: str, outcome: str
) -> None:
    g = asking(timeout_seconds=0.5, default=default)
    token = github_token()
    sent = g.send(env_turn(gate_dirs["project"], token)).wait()
    if outcome == "blocked":
        assert "nobody answered in time" in str(sent.error) and g.provider.seen == []
    else:
        assert sent.error is None and token not in g.provider.seen[-1].body.decode()
    [line] = (g.data / "decisions" / "dataset" / "send-secret.jsonl").read_text().splitlines()
    assert json.loads(line)["by"] == "timeout" and json.loads(line)["answer"] == default
    assert g.control().pending() == []


def test_ask_never_applies_the_default_at_once_and_says_nobody_was_asked(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking(mode="never")
    token = github_token()
    assert g.send(env_turn(gate_dirs["project"], token)).wait(10).error is None
    assert token not in g.provider.seen[-1].body.decode()
    [line] = (g.data / "decisions" / "dataset" / "send-secret.jsonl").read_text().splitlines()
    assert json.loads(line)["by"] == "policy"
    assert _secrets(g.data)[0]["decision"]["by"] == "policy"  # type: ignore[index]


def test_several_questions_pend_at_once_and_other_requests_keep_flowing(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    g = asking()
    tokens = [github_token() for _ in range(3)]
    sent = [g.send(env_turn(gate_dirs["project"], t, f"toolu_{i}")) for i, t in enumerate(tokens)]
    pending = g.wait_pending(3)
    assert len({q["id"] for q in pending}) == 3
    with g.client() as c:  # not held up by the parked ones
        assert c.messages.create(
            model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
        ).content
    by_preview = {q["findings"][0]["preview"][-4:]: q["id"] for q in pending}
    answers = ["approve", "redact", "block"]
    for t, answer in zip(tokens, answers, strict=True):
        g.control().answer(by_preview[t[-4:]], answer)
    for s in sent:
        s.wait()
    bodies = "".join(s.body.decode() for s in g.provider.seen)
    assert tokens[0] in bodies and tokens[1] not in bodies and tokens[2] not in bodies
    assert isinstance(sent[2].error, anthropic.BadRequestError)


def test_the_cli_says_when_no_gate_is_running(gate_dirs: dict[str, Path]) -> None:
    result = CliRunner().invoke(cli, ["pending"])
    assert result.exit_code == 3 and "no gate is running for data dir" in result.output
    assert "gate serve" in result.output


def test_a_request_whose_agent_gave_up_is_never_sent(
    asking: Callable[..., AskingGate], gate_dirs: dict[str, Path]
) -> None:
    import time

    import httpx2 as httpx

    g = asking()
    body = env_turn(gate_dirs["project"], github_token())
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{g.listening.base_url}/anthropic/v1/messages", json=body, timeout=1.0)
    deadline = time.monotonic() + 5
    while g.control().pending():  # withdrawn once gate sees the agent gone
        assert time.monotonic() < deadline
        time.sleep(0.05)
    time.sleep(0.5)
    assert g.provider.seen == []
