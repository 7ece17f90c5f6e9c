"""Exit codes, per class of command: 0 ok, 1 findings or a refusal, 2 usage, 3 cannot read
or reach; and with --json, one JSON object on stdout whichever it is."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli
from gate.proxy.server import Listening

READERS = (
    ("log",),
    ("show", "1"),
    ("show", "--session", "s1"),
    ("sessions",),
    ("search", "foo"),
    ("report",),
    ("audit", "verify"),
    ("decisions", "list"),
    ("history", "scan"),
)


def run(*args: str) -> tuple[int, dict[str, object] | None, str]:
    result = CliRunner().invoke(cli, list(args))
    parsed = json.loads(result.stdout) if "--json" in args else None  # all of stdout
    return result.exit_code, parsed, result.stderr


def error_of(out: dict[str, object] | None) -> dict[str, object]:
    assert out is not None and out["ok"] is False and set(out) == {"ok", "error"}
    error = out["error"]
    assert isinstance(error, dict) and {"code", "message", "hint"} <= set(error)
    return error


@pytest.mark.parametrize(
    "args",
    [
        ("log", "--since", "yesterday"),
        ("log", "--follow"),
        ("show",),
        ("search",),
        ("watch", "--limit", "0"),
        ("scan", "--json", "--sarif", "x"),
        ("report", "--since", "x"),
        ("rules", "check", "--bogus"),
        ("nonsense-command",),
    ],
)
def test_usage_errors_exit_2_with_one_json_object(args: tuple[str, ...]) -> None:
    code, out, err = run(*args, "--json")
    assert code == 2, (args, err)
    if args != ("nonsense-command",):  # click rejects an unknown command before any
        assert error_of(out)["code"] == "usage"


@pytest.mark.parametrize("args", READERS)
def test_a_data_dir_that_cannot_be_read_exits_3(
    args: tuple[str, ...], gate_dirs: dict[str, Path]
) -> None:
    gate_dirs["data"].write_text("a file where the data dir should be\n")
    code, out, err = run(*args, "--json")
    assert code == 3, (args, err)
    assert str(gate_dirs["data"]) in json.dumps(error_of(out)) and "Traceback" not in err
    assert str(gate_dirs["data"]) in err


@pytest.mark.parametrize(
    "args",
    [("log",), ("show", "1"), ("search", "foo"), ("report",), ("audit", "verify"), ("sessions",)],
)
def test_an_audit_that_is_not_a_database_exits_3_and_is_left_alone(
    args: tuple[str, ...], gate_dirs: dict[str, Path]
) -> None:
    gate_dirs["data"].mkdir()
    audit = gate_dirs["data"] / "audit.db"
    audit.write_bytes(b"not a database, " * 100)
    code, out, err = run(*args, "--json")
    assert code == 3, (args, err)
    assert "cannot read the audit" in str(error_of(out)["message"])
    assert audit.read_bytes() == b"not a database, " * 100


def test_export_of_an_unreadable_data_dir_exits_3_and_prints_no_lines(
    gate_dirs: dict[str, Path],
) -> None:
    gate_dirs["data"].write_text("x\n")
    result = CliRunner().invoke(cli, ["export"])
    assert result.exit_code == 3 and result.stdout == ""


@pytest.mark.parametrize(
    "args", [("pending", "--json"), ("approve", "q1"), ("redact", "q1"), ("block", "q1")]
)
def test_answering_without_a_running_gate_exits_3(args: tuple[str, ...]) -> None:
    code, out, err = run(*args)
    assert code == 3 and "no gate is running" in err
    if out is not None:
        assert "no gate is running" in str(error_of(out)["message"])


def test_a_gate_that_went_away_exits_3(gate_dirs: dict[str, Path]) -> None:
    """It said where it listens, its process lives (ours), but nothing answers there."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again before the call: connection refused
    control = gate_dirs["data"] / "control"
    control.mkdir(parents=True)
    (control / f"{os.getpid()}-{port}.json").write_text(
        json.dumps({"schemaVersion": 1, "pid": os.getpid(), "host": "127.0.0.1", "port": port})
    )
    (gate_dirs["data"] / "control.token").write_text("t" * 40)
    code, out, _ = run("pending", "--json")
    assert code == 3 and "did not answer" in str(error_of(out)["message"])


def test_refusals_and_findings_exit_1(gate: Listening, gate_dirs: dict[str, Path]) -> None:
    code, out, err = run("show", "999", "--json")
    assert code == 1 and "no request 999" in str(error_of(out)["message"])
    code, out, err = run("show", "--session", "nope", "--json")
    assert code == 1 and "no session 'nope'" in str(error_of(out)["message"])
    code, _, err = run("approve", "q-nosuch")  # a running gate refuses it
    assert code == 1 and "cannot answer q-nosuch" in err
    rules = gate_dirs["project"] / ".gate"
    rules.mkdir()
    (rules / "rules.yaml").write_text("deny:\n  - Read(./.env)\n")
    code, out, _ = run(
        "rules",
        "check",
        "--project",
        str(gate_dirs["project"]),
        "Read",
        str(gate_dirs["project"] / ".env"),
        "--json",
    )
    assert code == 1 and out is not None and out["ok"] is True and out["withheld"] is True
    leaked = gate_dirs["project"] / "notes.txt"
    leaked.write_text("token: ghp_" + os.urandom(18).hex()[:36] + "\n")
    code, out, _ = run("scan", str(leaked), "--json")
    assert code == 1 and out is not None and out["ok"] is True and out["findings"]
    code, out, _ = run("log", "--json")
    assert code == 0 and out is not None and out["ok"] is True


def test_scan_of_an_unreadable_input_exits_3_with_one_json_object(tmp_path: Path) -> None:
    code, out, err = run("scan", str(tmp_path / "missing.txt"), "--json")
    assert code == 3 and "cannot read" in str(error_of(out)["message"])
    bad = tmp_path / "baseline.json"
    bad.write_text("{not json")
    code, out, err = run("scan", str(tmp_path / "missing.txt"), "--baseline", str(bad), "--json")
    assert code == 3, err
    error_of(out)
