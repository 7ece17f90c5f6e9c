"""`gate export --jsonl`: one line per request, stable fields, never a body or a header."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
from click.testing import CliRunner

from gate.cli import cli
from report.audit_rows import Audit, local_day, noon

# The documented fields, in order (docs/report.md). Renaming one breaks a user's pipeline.
FIELDS = [
    "schema",
    "time",
    "id",
    "ts",
    "run_id",
    "agent",
    "upstream",
    "host",
    "method",
    "path",
    "model",
    "project_root",
    "request_bytes",
    "verdict",
    "withheld",
    "reason",
    "status",
    "latency_ms",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
    "error",
    "user_name",
    "decisions",
]


def export(*args: str) -> tuple[int, list[dict[str, Any]], str, str]:
    result = CliRunner().invoke(cli, ["export", *args])
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    return result.exit_code, lines, result.stdout, result.stderr


def test_one_line_per_request_oldest_first(audit: Audit) -> None:
    code, lines, _, _ = export("--jsonl")
    assert code == 0 and len(lines) == 8
    assert all(list(line) == FIELDS for line in lines)
    assert [line["ts"] for line in lines] == sorted(line["ts"] for line in lines)
    assert [line["schema"] for line in lines] == [1] * 8
    old = lines[0]
    assert (old["agent"], old["model"], old["request_bytes"], old["input_tokens"]) == (
        "claude-code",
        "claude-old",
        9999,
        10,
    )
    assert old["time"].endswith("+00:00") and local_day(old["ts"]) == local_day(noon(40))
    gate_rows = [line for line in lines if line["host"] == "127.0.0.1"]
    assert [r["verdict"] for r in gate_rows] == ["forwarded", "modified", "blocked"]
    assert gate_rows[0]["status"] == 200 and gate_rows[0]["output_tokens"] == 7
    assert "likely secret" in gate_rows[2]["reason"] and gate_rows[2]["status"] == 400


def test_withheld_entries_and_decisions(audit: Audit) -> None:
    _, lines, _, _ = export()
    codex = [line for line in lines if line["agent"] == "codex"]
    assert len(codex) == 2
    for line in codex:
        assert line["withheld"][0]["rule"] == "Read(./.env)"
        assert line["decisions"] == [
            {"id": "q1", "question": "send-denied-content", "answer": "block", "by": "person"}
        ]
    redacted = next(
        line for line in lines if line["host"] == "127.0.0.1" and line["verdict"] == "modified"
    )
    assert [w["kind"] for w in redacted["withheld"]] == ["secret"]
    assert len(redacted["withheld"][0]["fingerprint"]) == 16
    # a high-tier secret is an ask; the test gate runs with `ask: never`, so policy answered
    assert [(d["question"], d["answer"], d["by"]) for d in redacted["decisions"]] == [
        ("send-secret", "redact", "policy")
    ]


def test_never_a_body_a_secret_or_an_auth_header(audit: Audit, client: anthropic.Anthropic) -> None:
    _, lines, out, _ = export()
    assert lines and not any("body" in line for line in lines)
    assert audit.prompt not in out and "inserted body" not in out
    assert not any(secret in out for secret in audit.secrets)
    assert client.api_key not in out and "x-api-key" not in out.lower()


def test_since(audit: Audit) -> None:
    _, lines, _, _ = export("--since", "30d")
    assert len(lines) == 7 and "claude-old" not in [line["model"] for line in lines]
    _, lines, _, _ = export("--since", local_day(noon(2)))
    assert {local_day(line["ts"]) for line in lines} == {local_day(noon(2)), local_day(audit.now)}
    code, lines, _, _ = export("--since", "2999-01-01")
    assert code == 0 and lines == []


def test_output_file_is_owner_only(audit: Audit, tmp_path: Path) -> None:
    out = tmp_path / "siem" / "gate.jsonl"
    out.parent.mkdir(mode=0o755)
    out.parent.chmod(0o755)
    code, _, stdout, err = export("--output", str(out), "--since", "30d")
    assert code == 0 and stdout == "" and f"7 requests written to {out}" in err
    assert out.stat().st_mode & 0o777 == 0o600
    assert out.parent.stat().st_mode & 0o777 == 0o755  # the user's dir keeps its mode
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == [
        line["id"] for line in export("--since", "30d")[1]
    ]
    out.write_text("old export")
    out.chmod(0o644)
    export("--output", str(out))
    assert out.stat().st_mode & 0o777 == 0o600 and len(out.read_text().splitlines()) == 8
    assert [p.name for p in out.parent.iterdir()] == ["gate.jsonl"]  # no temp file left


def test_errors(tmp_path: Path, gate_dirs: dict[str, Path]) -> None:
    code, _, _, err = export("--since", "last week")
    assert code == 2 and "Invalid value for '--since'" in err and "'last week'" in err
    code, _, _, err = export("--output", str(tmp_path / "missing" / "x.jsonl"))
    assert code == 1 and f"no such directory: {tmp_path / 'missing'}" in err
    code, _, out, _ = export()
    assert code == 0 and out == ""  # no audit yet: nothing to export, nothing created
    assert not (gate_dirs["data"] / "audit.db").exists()
