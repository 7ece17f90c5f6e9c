"""`gate report`: the aggregates over a real audit, as JSON and as text, and its errors."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gate.audit.records import RequestRow
from gate.audit.report import COLUMNS
from gate.audit.store import AuditStore
from gate.cli import cli
from report.audit_rows import Audit, local_day, noon


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def report(*args: str) -> dict[str, Any]:
    code, out, err = invoke("report", "--json", *args)
    assert code == 0, err
    parsed: dict[str, Any] = json.loads(out)
    return parsed


def traffic(rows: list[dict[str, Any]]) -> dict[str | None, tuple[int, ...]]:
    return {
        r["key"]: (
            r["requests"],
            r["blocked"],
            r["bytes_sent"],
            r["input_tokens"],
            r["output_tokens"],
        )
        for r in rows
    }


def test_aggregates_per_day_host_agent_and_model(audit: Audit) -> None:
    data = report("--since", "30d")
    today = local_day(audit.now)
    gate = (3, 1, audit.gate_sent, 42, 14)  # blocked bytes never left: not counted as sent
    assert traffic(data["by_day"]) == {
        local_day(noon(5)): (2, 1, 3000, 400, 50),
        local_day(noon(2)): (2, 0, 11000, 2500, 500),
        today: gate,
    }
    assert [r["key"] for r in data["by_day"]] == sorted(
        [today, local_day(noon(2)), local_day(noon(5))]
    )
    assert traffic(data["by_host"]) == {
        "127.0.0.1": gate,
        "api.openai.com": (2, 0, 11000, 2500, 500),
        "generativelanguage.googleapis.com": (2, 1, 3000, 400, 50),
    }
    assert traffic(data["by_agent"]) == {
        None: gate,
        "codex": (2, 0, 11000, 2500, 500),
        "opencode": (2, 1, 3000, 400, 50),
    }
    assert [r["key"] for r in data["by_agent"]] == [None, "codex", "opencode"]  # busiest first
    models = traffic(data["by_model"])
    # The gate's blocked request keeps its model, as every row does; its bytes never left.
    assert models["claude-e2e"] == (3, 1, audit.gate_sent, 42, 14)
    assert None not in models
    assert models["<script>window.__pwned = 1</script>"] == (1, 0, 3000, 400, 50)
    totals = data["totals"]
    assert (totals["requests"], totals["blocked"], totals["bytes_sent"]) == (
        7,
        2,
        audit.gate_sent + 14000,
    )
    assert totals["cache_read_tokens"] == 6
    assert data["verdicts"] == {"blocked": 2, "forwarded": 1, "modified": 4}


def test_withheld_blocked_and_questions(audit: Audit) -> None:
    data = report("--since", "30d")
    withheld = {
        (w["kind"], w["rule"]): (w["items"], w["occurrences"], w["requests"], w["approved"])
        for w in data["withheld"]
    }
    assert withheld == {
        ("tool-result", "Read(./.env)"): (2, 2, 2, 0),
        # approved by a remembered answer: sent, so not withheld
        ("secret", "test-detector"): (0, 0, 0, 1),
        ("secret", "github.token"): (1, 1, 1, 0),
    }  # the gate's own redaction
    blocked = {b["reason"]: b["requests"] for b in data["blocked"]}
    assert blocked["body is not JSON <b>bold</b>"] == 1
    assert [n for reason, n in blocked.items() if "likely secret" in reason] == [1]
    # q1 was asked once and recurs in the resent history of the next request: one question.
    assert data["questions"] == [
        {
            "question": "send-denied-content",
            "answer": "block",
            "by": "person",
            "questions": 1,
            "items": 2,
        },
        {
            "question": "send-secret",
            "answer": "approve",
            "by": "memory",
            "questions": 1,
            "items": 1,
        },
        # the gate's own: a high-tier secret is an ask, and its gate runs with `ask: never`
        {"question": "send-secret", "answer": "redact", "by": "policy", "questions": 1, "items": 1},
    ]


def test_since_filters_by_span_and_by_date(audit: Audit) -> None:
    everything = report()
    assert everything["totals"]["requests"] == 8 and everything["since"] is None
    assert "claude-code" in [r["key"] for r in everything["by_agent"]]
    assert report("--since", "3d")["totals"]["requests"] == 5  # today and two days ago
    data = report("--since", local_day(noon(2)))
    assert [r["key"] for r in data["by_day"]] == [local_day(noon(2)), local_day(audit.now)]
    assert report("--since", "1h")["totals"]["requests"] == 3  # the gate's requests only


def test_text_tables(audit: Audit) -> None:
    code, out, _ = invoke("report", "--since", "30d")
    assert code == 0
    assert "7 requests (2 blocked, 1 forwarded, 4 modified)" in out
    assert re.search(r"^  codex\s+2\s+0\s+11\.0 kB\s+2,500\s+500$", out, re.M)
    assert re.search(
        rf"^  {re.escape(local_day(noon(5)))}\s+2\s+1\s+3\.0 kB\s+400\s+50$", out, re.M
    )
    assert re.search(r"^  tool-result\s+Read\(\./\.env\)\s+2\s+2\s+2\s+0$", out, re.M)
    assert re.search(r"^  secret\s+test-detector\s+0\s+0\s+0\s+1$", out, re.M)  # approved
    assert re.search(r"^  send-secret\s+approve\s+memory\s+1\s+1$", out, re.M)
    assert re.search(r"^  send-denied-content\s+block\s+person\s+1\s+2$", out, re.M)
    for title in (
        "Per day",
        "Per host",
        "Per agent",
        "Per model",
        "Withheld and redacted, by kind and rule",
        "Blocked requests, by reason",
        "Questions asked and answers",
    ):
        assert f"\n{title}\n" in out


def test_nothing_of_a_body_or_secret_reaches_a_report(audit: Audit) -> None:
    code, out, _ = invoke("report")
    text = out + json.dumps(report())
    assert code == 0 and audit.prompt not in text and "inserted body" not in text
    assert not any(secret in text for secret in audit.secrets)


def test_control_characters_from_the_audit_cannot_drive_the_terminal(
    gate_dirs: dict[str, Path],
) -> None:
    AuditStore(gate_dirs["data"] / "audit.db").record_request(
        RequestRow(
            upstream="x",
            host="h",
            method="POST",
            path="/",
            request_bytes=1,
            verdict="forwarded",
            model="evil\x1b[2J\x1b]0;title\x07",
        ),
    )
    code, out, _ = invoke("report")
    assert code == 0 and "\x1b" not in out and "\x07" not in out
    assert "evil\\x1b[2J\\x1b]0;title\\x07" in out


def test_an_empty_audit_says_so_and_creates_nothing(gate_dirs: dict[str, Path]) -> None:
    code, out, _ = invoke("report")
    assert code == 0 and "no requests recorded yet" in out
    assert not (gate_dirs["data"] / "audit.db").exists()
    assert report()["totals"]["requests"] == 0
    AuditStore(gate_dirs["data"] / "audit.db").record_request(
        RequestRow(
            ts=noon(10),
            upstream="x",
            host="h",
            method="POST",
            path="/",
            request_bytes=1,
            verdict="forwarded",
        ),
    )
    code, out, _ = invoke("report", "--since", "2d")
    assert code == 0 and "no requests recorded in this period" in out


def test_bad_since_is_a_usage_error() -> None:
    for bad in ("yesterday", "30x", "2026-13-01"):
        code, _, err = invoke("report", "--since", bad)
        assert code == 2
        assert "Invalid value for '--since'" in err and repr(bad) in err


def test_a_damaged_audit_is_an_error_naming_the_file(gate_dirs: dict[str, Path]) -> None:
    path = gate_dirs["data"] / "audit.db"
    gate_dirs["data"].mkdir()
    path.write_bytes(b"not a database at all" * 100)
    code, out, err = invoke("report")
    assert code == 3 and out == ""  # cannot read
    assert f"{path}: cannot read the audit" in err and "hint:" in err


@pytest.mark.parametrize(
    ("stored", "says"),
    [
        ("{oops", "withheld is not a JSON list of objects"),
        ('["just a string"]', "withheld is not a JSON list of objects"),
        (
            '[{"kind": "secret", "decision": "approve"}]',
            "a withheld entry's decision is not an object",
        ),
    ],
)
def test_an_unreadable_withheld_list_names_the_request(
    gate_dirs: dict[str, Path], stored: str, says: str
) -> None:
    store = AuditStore(gate_dirs["data"] / "audit.db")
    kw: dict[str, Any] = {
        "upstream": "x",
        "host": "h",
        "method": "POST",
        "path": "/",
        "request_bytes": 1,
        "verdict": "modified",
    }
    store.record_request(RequestRow(**kw, withheld=[{"kind": "secret", "rule": "r"}]))
    bad = store.record_request(RequestRow(**kw, withheld=[{"kind": "secret", "rule": "r"}]))
    db = sqlite3.connect(gate_dirs["data"] / "audit.db")
    db.execute("UPDATE requests SET withheld = ? WHERE id = ?", (stored, bad))
    db.commit()
    db.close()
    for command in ("report", "export"):  # never a silently short count
        code, out, err = invoke(command)
        assert code == 3 and f"audit.db: request {bad}: {says}" in err
        assert out.count("\n") == (1 if command == "export" else 0)  # export streams


def test_only_metadata_columns_are_read(
    audit: Audit, gate_dirs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An audit that holds nothing but the metadata columns (no body, no storage details,
    which change) gives the same report and export."""
    before = invoke("export")[1], report("--since", "30d")
    slim = tmp_path / "slim"
    slim.mkdir()
    db = sqlite3.connect(slim / "audit.db")
    db.execute("ATTACH ? AS full", (str(gate_dirs["data"] / "audit.db"),))
    db.execute(
        f"CREATE TABLE requests AS SELECT {', '.join(COLUMNS)}"  # noqa: S608 (ours)
        " FROM full.requests"
    )
    db.commit()
    db.close()
    monkeypatch.setenv("GATE_DATA_DIR", str(slim))
    after = invoke("export")[1], report("--since", "30d")
    assert after[0] == before[0] and after[1]["totals"] == before[1]["totals"]
    assert after[1]["withheld"] == before[1]["withheld"]


def test_empty_sections_say_so(gate_dirs: dict[str, Path]) -> None:
    AuditStore(gate_dirs["data"] / "audit.db").record_request(
        RequestRow(
            upstream="anthropic",
            host="api.anthropic.com",
            method="POST",
            path="/v1/messages",
            request_bytes=1234,
            verdict="forwarded",
            agent="claude-code",
            model="claude-x",
        ),
    )
    code, out, _ = invoke("report")
    assert code == 0 and "1 request (1 forwarded)" in out
    for said in (
        "Withheld and redacted, by kind and rule\n  nothing was withheld or redacted",
        "Blocked requests, by reason\n  no request was blocked",
        "Questions asked and answers\n  no questions were asked",
    ):
        assert said in out
    data = report()
    assert (data["withheld"], data["blocked"], data["questions"]) == ([], [], [])
