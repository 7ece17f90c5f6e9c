"""Reading the audit through a real gate: `gate log`, `gate show --new`, `gate search`,
`gate search --value-of`, and sixteen SDK sessions at once."""

from __future__ import annotations

import base64
import json
import os
import random
import threading
from pathlib import Path
from typing import Any

import anthropic
from click.testing import CliRunner

from conftest import closed_after_test
from gate.audit import chain
from gate.audit.records import RequestRow
from gate.audit.store import AuditStore
from gate.cli import cli
from gate.proxy.server import Listening
from screen.secrets_corpus import Gen


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def session(gate: Listening, sid: str) -> anthropic.Anthropic:
    return closed_after_test(
        anthropic.Anthropic(
            base_url=f"{gate.base_url}/anthropic",
            api_key="sk-ant-test",
            max_retries=0,
            default_headers={"x-claude-code-session-id": sid},
        )
    )


def converse(client: anthropic.Anthropic, turns: list[str]) -> None:
    messages: list[Any] = []
    for text in turns:
        messages.append({"role": "user", "content": text + " " + "context " * 200})
        reply = client.messages.create(model="claude-cli", max_tokens=8, messages=messages)
        messages.append({"role": "assistant", "content": reply.content[0].text})


def session_of(row_id: int) -> str:
    _code, out, _ = invoke("show", str(row_id), "--json")
    return str(json.loads(out)["request"]["session"])


def test_show_new_prints_only_what_the_turn_added(
    gate: Listening, gate_dirs: dict[str, Path]
) -> None:
    converse(session(gate, "one"), ["first question", "second question", "third question"])
    converse(session(gate, "two"), ["unrelated thread"])  # another session in between
    code, out, _ = invoke("log", "--json")
    ids = [r["id"] for r in json.loads(out)["requests"] if r["model"] == "claude-cli"]
    assert code == 0 and len(ids) == 4
    third = sorted(ids)[2]
    code, out, _ = invoke("show", str(third), "--new", "--json")
    new = json.loads(out)["new"]
    assert code == 0 and new["previous"] == third - 1
    added = "".join(p["text"] for p in new["parts"])
    assert "third question" in added and "first question" not in added
    assert new["new_bytes"] < new["body_bytes"] / 2
    code, out, _ = invoke("show", str(third), "--new")
    assert f"--- new since request {third - 1}" in out and "third question" in out
    assert "--- body sent ---" not in out
    code, out, _ = invoke("show", str(min(ids)), "--new")
    assert "all of it is new" in out
    blocked = AuditStore(gate_dirs["data"] / "audit.db").record_request(
        RequestRow(
            upstream="anthropic",
            host="h",
            method="POST",
            path="/v1/messages",
            request_bytes=0,
            verdict="blocked",
            reason="test",
            session=session_of(third),
        ),
    )
    code, out, _ = invoke("show", str(blocked), "--new")
    assert code == 0 and "no body was recorded" in out


def test_log_filters_by_time_and_agent(gate: Listening) -> None:
    converse(session(gate, "a"), ["hello there"])
    code, out, _ = invoke("log", "--since", "1h", "--json")
    assert code == 0 and len(json.loads(out)["requests"]) == 1
    code, out, _ = invoke("log", "--since", "2999-01-01", "--json")
    assert code == 0 and json.loads(out)["requests"] == []
    code, out, _ = invoke("log", "--agent", "nobody")
    assert code == 0 and "no requests recorded matching these filters" in out
    code, _, err = invoke("log", "--since", "yesterday")
    assert code == 2 and "neither a span like 7d" in err


def test_search_finds_text_with_a_snippet_and_each_resend(gate: Listening) -> None:
    converse(session(gate, "s"), ["please refactor the Quokka parser", "and now the tests"])
    code, out, _ = invoke("search", "quokka   PARSER", "--json")
    found = json.loads(out)["found"]
    assert code == 1 and len(found) == 1
    assert "[Quokka parser]" in found[0]["snippet"]
    assert len(found[0]["requests"]) == 2  # sent once, resent with the next turn
    code, out, _ = invoke("search", "quokka parser")
    assert code == 1 and "sent again by 1 later" in out and "[Quokka parser]" in out
    code, out, _ = invoke("search", "wombat")
    assert code == 0 and "not found" in out
    code, out, _ = invoke("search", "quokka", "--since", "2999-01-01", "--json")
    assert code == 0 and json.loads(out)["found"] == []
    code, _, err = invoke("search", "!!!")
    assert code == 2 and "at least one word" in err
    code, _, err = invoke("search")
    assert code == 2 and "give TEXT or --value-of FILE" in err


def test_value_of_says_which_values_left_and_which_were_withheld(
    gate: Listening, tmp_path: Path
) -> None:
    plain = "blue-otter-" + os.urandom(6).hex()
    token = Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")
    kept = "never-sent-" + os.urandom(6).hex()
    env = tmp_path / "leak.env"
    env.write_text(f"APP_PASS={plain}\nGITHUB_TOKEN={token}\nOTHER={kept}\n")
    encoded = base64.b64encode(plain.encode()).decode()
    converse(session(gate, "v"), [f"remember {plain}", f"encoded {encoded}", f"token {token}"])
    code, out, _ = invoke("search", "--value-of", str(env), "--json")
    report = {a["value"]: a for a in json.loads(out)["values"]}
    assert code == 1
    sent = report["value 1 of leak.env"]
    assert sent["status"] == "sent"
    assert len(sent["sent"]) == 3  # as written, then base64'd, then resent with the history
    assert report["value 2 of leak.env"]["status"] == "withheld"
    assert report["value 2 of leak.env"]["sent"] == []
    assert report["value 3 of leak.env"]["status"] == "never seen"
    assert plain not in out and token not in out and kept not in out
    code, out, _ = invoke("search", "--value-of", str(env))
    assert "value 1 of leak.env: SENT" in out and "value 2 of leak.env: withheld" in out
    assert plain not in out
    empty = tmp_path / "empty.env"
    empty.write_text("DEBUG=true\n")
    code, _, err = invoke("search", "--value-of", str(empty))
    assert code == 1 and str(empty) in err and "no value in this file" in err


def test_value_of_numbers_values_in_file_order_whichever_way_each_is_found(
    gate: Listening, tmp_path: Path
) -> None:
    """An all-digit tail fails the generic assignment rule while the token on the next
    line is detected: the numbers still follow the file (they once put detected first,
    and the test above failed one run in ~200 when its random tail came out all digits)."""
    plain = "blue-otter-" + "".join(random.choice("0123456789") for _ in range(12))
    token = Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")
    env = tmp_path / "digits.env"
    env.write_text(f"APP_PASS={plain}\nGITHUB_TOKEN={token}\n")
    converse(session(gate, "d"), [f"remember {plain}"])
    code, out, _ = invoke("search", "--value-of", str(env), "--json")
    report = {a["value"]: a["status"] for a in json.loads(out)["values"]}
    assert code == 1
    assert report == {"value 1 of digits.env": "sent", "value 2 of digits.env": "never seen"}


def test_sixteen_sdk_sessions_at_once(gate: Listening, gate_dirs: dict[str, Path]) -> None:
    errors: list[BaseException] = []

    def agent(n: int) -> None:
        try:
            converse(session(gate, f"par-{n}"), [f"task {n} step {k}" for k in range(3)])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=agent, args=(n,)) for n in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = AuditStore(gate_dirs["data"] / "audit.db")
    verdict = chain.verify(store.conn())
    assert verdict.ok and verdict.requests == 48
    sessions = {r["session"] for r in store.rows(100, body=False)}
    assert len(sessions) == 16
