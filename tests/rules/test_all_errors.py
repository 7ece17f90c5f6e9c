"""A rule or config file with mistakes: every one is reported at once, at its line, with
the spelling it probably meant; a rule YAML folded into the one above is one of them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate import config
from gate.cli import cli
from gate.errors import ConfigError, RuleError
from gate.rules.loader import load_text


def all_errors(exc: RuleError | ConfigError) -> list[str]:
    return [exc.diagnostics().splitlines()[0]] + [e.diagnostics() for e in exc.also]


def test_a_slipped_indent_that_folds_two_rules_into_one_is_an_error() -> None:
    # Without the check, this loads one rule, Read("./.env) Read(./secrets/**"), which
    # matches neither file: both would be sent.
    text = "deny:\n  - Read(./.env)\n   Read(./secrets/**)\n  - Bash(curl *)\n"
    with pytest.raises(RuleError) as caught:
        load_text(text, "rules.yaml")
    assert caught.value.where == "rules.yaml:2"
    assert "runs on to line 3" in caught.value.message
    assert "own line with '- '" in str(caught.value.hint)
    # The same slip deeper in a list, and in a mapping entry's rule:
    for text, line in (
        ("ask:\n  - Bash(curl *)\n  - Read(./a)\n    Read(./b)\n", 3),
        ("deny:\n  - rule: Read(./a)\n      Read(./b)\n    reason: x\n", 2),
    ):
        with pytest.raises(RuleError) as caught:
            load_text(text, "r.yaml")
        assert caught.value.where == f"r.yaml:{line}", text


def test_a_multi_line_block_rule_is_still_accepted() -> None:
    rules = load_text("deny:\n  - |-\n    Bash(curl *)\n  - Read(./.env)\n", "r.yaml")
    assert [(r.tool, r.specifier, r.line) for r in rules] == [
        ("Bash", "curl *", 2),
        ("Read", "./.env", 4),
    ]


def test_every_error_of_a_rule_file_is_reported_at_once_with_did_you_mean() -> None:
    text = (
        "deny:\n"
        "  - Raed(./.env)\n"  # 2: a misspelt tool, would never match
        "  - Read(~/.ssh/**)\n"
        "  - rule: Bash(curl *)\n"
        "    reasn: no curl\n"  # 4: entry key misspelt
        "asks:\n"  # 6: top key misspelt
        "  - Read(./x)\n"
        "allow:\n"
        "  - read(./docs/**)\n"  # 9: wrong case
    )
    with pytest.raises(RuleError) as caught:
        load_text(text, "rules.yaml")
    lines = all_errors(caught.value)
    assert [line.split(": ", 1)[0] for line in lines[:1]] == ["rules.yaml:2"]
    wheres = [e.where for e in (caught.value, *caught.value.also)]
    assert wheres == ["rules.yaml:2", "rules.yaml:4", "rules.yaml:6", "rules.yaml:9"]
    text_all = caught.value.diagnostics()
    assert "did you mean Read?" in text_all
    assert "did you mean 'reason'?" in text_all
    assert "did you mean 'ask'?" in text_all
    assert "write Read(...)" in text_all


def test_unknown_tools_that_are_not_near_a_known_name_still_load() -> None:
    rules = load_text("deny:\n  - apply_patch\n  - mcp__gihtub__push\n  - shell(rm *)\n", "r.yaml")
    assert [r.tool for r in rules] == ["apply_patch", "mcp__gihtub__push", "shell"]


def test_every_config_error_is_reported_at_once_with_lines(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        "prot: 9000\n"  # 1
        "host: ''\n"  # 2
        "audit:\n"
        "  max_size_mbb: 10\n"  # 4
        "screen:\n"
        "  max_files: -1\n"  # 6
        "projects:\n"
        "  - /nonexistent/dir\n"  # 8
    )
    with pytest.raises(ConfigError) as caught:
        config.load(path)
    wheres = [e.where for e in (caught.value, *caught.value.also)]
    assert wheres == [
        f"{path}:{n}: {field}"
        for n, field in (  # in the file's order
            (1, "prot"),
            (2, "host"),
            (4, "audit.max_size_mbb"),
            (6, "screen.max_files"),
            (8, "projects[0]"),
        )
    ]
    text = caught.value.diagnostics()
    assert "did you mean 'port'?" in text and "did you mean 'max_size_mb'?" in text
    # A file with one mistake reads as before: one error.
    path.write_text("port: 8788\nscreen:\n  max_file: 3\n")
    with pytest.raises(ConfigError) as caught:
        config.load(path)
    assert caught.value.also == () and caught.value.where == f"{path}:3: screen.max_file"


def test_the_cli_prints_them_all_and_json_lists_them(gate_dirs: dict[str, Path]) -> None:
    gate_dirs["config"].mkdir()
    (gate_dirs["config"] / "config.yaml").write_text("prot: 1\nhots: x\n")
    result = CliRunner().invoke(cli, ["rules", "list", "--json"])
    assert result.exit_code == 1
    error = json.loads(result.stdout)["error"]
    assert error["where"].endswith("config.yaml:1: prot")
    assert [e["where"][-8:] for e in error["also"]] == [":2: hots"]
    assert "config.yaml:2: hots: unknown key 'hots'" in result.stderr
