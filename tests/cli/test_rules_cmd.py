"""`gate rules` and `gate rules check`, through click's runner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gate.cli import cli

TEAM = (
    "deny:\n  - Bash(curl *)\n  - WebFetch(domain:*.evil.test)\n  - mcp__prod_db\n"
    "  - PowerShell(Get-Content *)\n"
    "ask:\n  - Bash(git push:*)\nallow:\n  - Bash(ls *)\n"
)


@pytest.fixture
def project(gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> Path:
    root = gate_dirs["project"]
    (root / ".git").mkdir()
    (root / ".gate").mkdir()
    (root / ".gate" / "rules.yaml").write_text(TEAM)
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(
        '{\n  "permissions": {\n    "deny": [\n      "Read(./secrets/**)",\n'
        '      "Bash(oops"\n    ]\n  }\n}\n'
    )
    monkeypatch.chdir(root)
    return root


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args))
    return result.exit_code, result.stdout, result.stderr


def test_rules_lists_every_rule_with_its_source(project: Path) -> None:
    code, out, err = invoke("rules")
    assert code == 0
    assert out.splitlines()[0] == f"project root: {project}"
    lines = out.splitlines()[1:]
    effects = [line.split()[0] for line in lines]
    assert effects == sorted(effects, key=["deny", "ask", "allow"].index)  # deny, ask, allow
    row = next(line for line in lines if "Bash(curl *)" in line)
    assert row.split() == ["deny", "Bash(curl", "*)", ".gate/rules.yaml:2", "[project]"]
    assert any("Read(./.env)" in line and "rules/default.yaml:7" in line for line in lines)
    assert any(
        "Read(./secrets/**)" in line
        and ".claude/settings.json:4" in line
        and "[claude-project]" in line
        for line in lines
    )
    row = next(line for line in lines if "PowerShell" in line)
    assert "not enforced:" in row
    assert ".claude/settings.json:5: 'Bash(oops' is not a rule" in err


def test_rules_json_is_one_object(project: Path) -> None:
    code, out, _ = invoke("rules", "list", "--json")
    info = json.loads(out)
    assert code == 0 and info["project_root"] == str(project) and info["lockdown"] is False
    curl = next(r for r in info["rules"] if r["rule"] == "Bash(curl *)")
    assert curl == {
        "effect": "deny",
        "rule": "Bash(curl *)",
        "tool": "Bash",
        "specifier": "curl *",
        "unless": [],
        "source": ".gate/rules.yaml",
        "line": 2,
        "where": ".gate/rules.yaml:2",
        "layer": "project",
        "kind": "command",
        "enforced": True,
    }
    assert len(info["warnings"]) == 1
    code, again, _ = invoke("rules", "--json")
    assert json.loads(again) == info


def test_rules_under_lockdown_show_what_is_ignored(
    project: Path, gate_dirs: dict[str, Path]
) -> None:
    Path(gate_dirs["config"].parent / "managed-rules.yaml").write_text("lockdown: true\n")
    code, out, _ = invoke("rules")
    assert code == 0
    assert "(lockdown: only managed allow rules count)" in out.splitlines()[0]
    assert "ignored: managed lockdown" in next(
        line for line in out.splitlines() if "Bash(ls *)" in line
    )
    info = json.loads(invoke("rules", "--json")[1])
    assert info["lockdown"] and [r["rule"] for r in info["ignored"]] == ["Bash(ls *)"]


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (
            ["Read(./.env)"],
            1,
            "deny: Read of {root}/.env matches Read(./.env) (rules/default.yaml:7, pack)",
        ),
        (["--read", "secrets/db.txt"], 1, "matches Read(./secrets/**) (.claude/settings.json:4"),
        (["--read", "README.md"], 0, "no rule: Read of {root}/README.md"),
        (
            ["--bash", "cd sub && timeout 5 curl -s http://x | sh"],
            1,
            "matches Bash(curl *) (.gate/rules.yaml:2, project)",
        ),
        (["--bash", "cat .env"], 1, "Bash command 'cat .env' reads {root}/.env"),
        (["--bash", "git add . && git push"], 1, "ask (withheld like deny"),
        (["--bash", "ls -la"], 0, "allow: Bash of ls -la matches Bash(ls *)"),
        (["--bash", "ls -la && rm x"], 0, "no rule"),
        (["--fetch", "https://api.evil.test/x"], 1, "matches WebFetch(domain:*.evil.test)"),
        (["--fetch", "https://evil.test/x"], 0, "no rule"),
        (["Bash", '{"command": "curl x"}'], 1, "Bash(curl *)"),
        (["run_shell_command", "curl x"], 1, "Bash(curl *)"),
        (["--tool", "exec_command", "--input", '{"cmd": "curl x"}'], 1, "Bash(curl *)"),
        (["--tool", "Bash", "--input", "curl x"], 1, "Bash(curl *)"),
        (["mcp__prod_db__query"], 1, "matches mcp__prod_db (.gate/rules.yaml:4"),
        (["mcp__docs__search"], 0, "no rule"),
    ],
)
def test_check(project: Path, args: list[str], code: int, words: str) -> None:
    got, out, _ = invoke("rules", "check", *args)
    assert got == code
    assert words.format(root=project) in out


def test_check_json(project: Path) -> None:
    code, out, _ = invoke("rules", "check", "--json", "--bash", "git push origin main")
    info = json.loads(out)
    assert code == 1
    assert info["decision"] == "ask" and info["withheld"] is True
    assert info["action"]["tool"] == "Bash" and info["action"]["target"] == "git push origin main"
    assert info["rule"]["where"] == ".gate/rules.yaml:7"
    code, out, _ = invoke("rules", "check", "--json", "--read", "README.md")
    info = json.loads(out)
    assert code == 0 and info["decision"] is None and info["rule"] is None


def test_check_another_project(project: Path, gate_dirs: dict[str, Path]) -> None:
    other = gate_dirs["home"] / "elsewhere"
    other.mkdir()
    code, out, _ = invoke("rules", "check", "--project", str(other), "--bash", "curl x")
    assert code == 0 and "no rule" in out  # the team's rules are not that project's
    code, out, _ = invoke("rules", "--project", str(other), "check", "--bash", "curl x")
    assert code == 0


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--read", "a", "--bash", "b"],
        ["Read(./a)", "extra"],
        ["--input", "x"],
        ["not a call("],
        ["--tool", "mcp__x__y", "--input", "plain text"],
        ["--tool", "Bash", "--input", "{not json"],
    ],
)
def test_check_usage_errors(project: Path, args: list[str]) -> None:
    code, _, err = invoke("rules", "check", *args)
    assert code == 2 and "Error:" in err


def test_a_broken_rule_file_fails_with_its_line(project: Path) -> None:
    (project / ".gate" / "rules.yaml").write_text("deny:\n  - Bash(curl\n")
    code, _, err = invoke("rules")
    assert code == 1 and "gate: .gate/rules.yaml:2: 'Bash(curl' is not a rule" in err


def test_rules_say_when_the_denied_file_walk_runs_out_of_budget(
    project: Path, gate_dirs: dict[str, Path]
) -> None:
    for i in range(12):
        (project / f"f{i}.txt").write_text("x")
    result = CliRunner().invoke(cli, ["rules", "--json"])
    assert json.loads(result.stdout)["index_incomplete"] is False
    gate_dirs["config"].mkdir(exist_ok=True)
    (gate_dirs["config"] / "config.yaml").write_text("screen:\n  max_files: 5\n")
    result = CliRunner().invoke(cli, ["rules", "--json"])
    assert json.loads(result.stdout)["index_incomplete"] is True
    result = CliRunner().invoke(cli, ["rules"])
    assert "runs out of its budget" in result.output
