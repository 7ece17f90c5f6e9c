"""`gate env`, `gate paths`, `gate log`, `gate show`, and config errors, via the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
from audit_rows import messages_row
from click.testing import CliRunner

from gate.cli import cli
from gate.proxy.server import Listening


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_env_prints_exports_for_the_running_gate(gate: Listening) -> None:
    code, out, _ = invoke("env", "--agent", "claude-code")
    assert code == 0
    assert out.strip() == f"export ANTHROPIC_BASE_URL={gate.base_url}/anthropic"
    code, out, _ = invoke("env")
    assert f"export OPENAI_BASE_URL={gate.base_url}/openai/v1" in out


def test_env_without_a_running_gate_uses_the_configured_port() -> None:
    code, out, _ = invoke("env", "--no-check", "--agent", "claude-code")
    assert code == 0
    assert out.strip() == "export ANTHROPIC_BASE_URL=http://127.0.0.1:8787/anthropic"


def test_paths_json_is_one_object(gate_dirs: dict[str, Path]) -> None:
    code, out, _ = invoke("paths", "--json")
    info = json.loads(out)
    assert code == 0
    assert info["config_dir"] == str(gate_dirs["config"])
    assert info["data_dir"] == str(gate_dirs["data"])
    assert info["audit_db"].endswith("audit.db")
    data = gate_dirs["data"]
    assert (info["decision_memory"], info["decision_dataset"], info["control_token"]) == (
        str(data / "decisions" / "memory.json"),
        str(data / "decisions" / "dataset"),
        str(data / "control.token"),
    )


def test_log_and_show(client: anthropic.Anthropic) -> None:
    client.messages.create(
        model="claude-log", max_tokens=8, messages=[{"role": "user", "content": "remember me"}]
    )
    code, out, _ = invoke("log", "--json")
    rows = json.loads(out)["requests"]
    assert code == 0 and rows[0]["model"] == "claude-log" and "body" not in rows[0]
    code, out, _ = invoke("log")
    assert "claude-log" in out and "forwarded" in out
    code, out, _ = invoke("show", str(rows[0]["id"]), "--json", "--body")
    assert json.loads(json.loads(out)["request"]["body"])["messages"][0]["content"] == "remember me"
    code, out, _ = invoke("show", str(rows[0]["id"]), "--body")
    assert "--- body sent ---" in out and "remember me" in out
    code, _, err = invoke("show", "999")
    assert code == 1 and "no request 999" in err


def test_bad_config_names_the_file_and_field(gate_dirs: dict[str, Path]) -> None:
    gate_dirs["config"].mkdir()
    (gate_dirs["config"] / "config.yaml").write_text("prot: 9000\n")
    code, _, err = invoke("env")
    assert code == 1
    assert "config.yaml:1: prot: unknown key 'prot'" in err and "did you mean 'port'?" in err
    (gate_dirs["config"] / "config.yaml").write_text("upstreams:\n  work: ftp://x\n")
    code, _, err = invoke("env")
    assert code == 1 and "upstreams.work" in err and "not an http(s) URL" in err


def test_bad_upstream_option_is_an_error() -> None:
    code, _, err = invoke("serve", "--upstream", "nonsense")
    assert code == 1 and "expected NAME=URL" in err


def test_upstream_entries_may_opt_out_of_json_screening(gate_dirs: dict[str, Path]) -> None:
    from gate import config

    gate_dirs["config"].mkdir()
    path = gate_dirs["config"] / "config.yaml"
    path.write_text(
        "upstreams:\n  files:\n    url: https://upload.example\n"
        "    unsafe_pass_non_json: true\n  plain: https://plain.example\n"
    )
    cfg = config.load(path)
    assert cfg.upstreams["files"].unsafe_pass_non_json is True
    assert cfg.upstreams["plain"].unsafe_pass_non_json is False
    assert cfg.upstreams["anthropic"].unsafe_pass_non_json is False
    path.write_text("upstreams:\n  files:\n    url: https://upload.example\n    unsafe: 1\n")
    code, _, err = invoke("env")
    assert code == 1 and "upstreams.files" in err and "unknown key 'unsafe'" in err


def test_reading_an_unreadable_audit_is_a_clear_error_and_moves_nothing(
    gate_dirs: dict[str, Path],
) -> None:
    """Only a starting gate moves a corrupt audit aside; `gate log` and `gate show` say
    what is wrong and leave the file where it is."""
    gate_dirs["data"].mkdir()
    path = gate_dirs["data"] / "audit.db"
    path.write_bytes(b"not a database, " * 100)
    for args in (("log",), ("show", "1"), ("search", "x")):
        code, _, err = invoke(*args)
        assert code == 3, args  # cannot read
        assert f"{path}: cannot read the audit" in err
    assert path.read_bytes() == b"not a database, " * 100
    assert not list(gate_dirs["data"].glob("audit.db.corrupt-*"))


def test_log_counts_approved_findings_apart_from_withheld_ones(gate_dirs: dict[str, Path]) -> None:
    from gate.audit.store import AuditStore

    def finding(answer: str | None) -> dict[str, object]:
        entry: dict[str, object] = {"kind": "secret", "rule": "github.token", "count": 1}
        if answer:
            entry["decision"] = {
                "id": "q1",
                "question": "send-secret",
                "answer": answer,
                "by": "person",
            }
        return entry

    store = AuditStore(gate_dirs["data"] / "audit.db")
    store.record_request(
        messages_row(
            b"{}",
            request_bytes=2,
            verdict="modified",
            withheld=[finding("approve"), finding("redact"), finding(None)],
        ),
    )
    store.close()
    code, out, _ = invoke("log")
    assert code == 0 and "withheld=2 approved=1" in out
