"""Every --json prints exactly one JSON object, on success and on failure."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import click
from click.testing import CliRunner

import gate.cli
from gate.cli import MODULES, cli


def one_object(*args: str) -> tuple[int, dict[str, object]]:
    result = CliRunner().invoke(cli, list(args))
    parsed = json.loads(result.stdout)  # the whole of stdout is one object
    assert isinstance(parsed, dict)
    return result.exit_code, parsed


def test_success_and_failure_are_one_object_with_ok(tmp_path: Path) -> None:
    code, out = one_object("log", "--json")
    assert code == 0 and out["ok"] is True and out["requests"] == []
    code, out = one_object("log", "--since", "yesterday", "--json")
    error = out["error"]
    assert code == 2 and out["ok"] is False and isinstance(error, dict)
    assert error["code"] == "usage" and "neither a span" in str(error["message"])
    code, out = one_object("show", "999", "--json")
    error = out["error"]
    assert code == 1 and out["ok"] is False and isinstance(error, dict)
    assert "no request 999" in str(error["message"]) and "gate log" in str(error["hint"])
    empty = tmp_path / "empty.env"
    empty.write_text("DEBUG=true\n")
    code, out = one_object("search", "--value-of", str(empty), "--json")
    error = out["error"]
    assert code == 1 and isinstance(error, dict) and error["where"] == str(empty)


def test_completion_scripts_complete_gate_commands() -> None:
    import os
    import subprocess
    import sys

    for shell, marker in (("bash", "complete -o"), ("zsh", "compdef"), ("fish", "complete")):
        result = CliRunner().invoke(cli, ["completion", shell])
        assert result.exit_code == 0 and marker in result.stdout
        assert "_GATE_COMPLETE" in result.stdout
    # What the script asks gate for, gate answers: the commands starting with "se".
    env = {
        **os.environ,
        "_GATE_COMPLETE": "bash_complete",
        "COMP_WORDS": "gate se",
        "COMP_CWORD": "1",
    }
    done = subprocess.run(
        [sys.executable, "-c", "from gate.cli import main; main()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = {line.split(",", 1)[1] for line in done.stdout.splitlines() if "," in line}
    assert {"search", "serve", "sessions"} <= names
    assert CliRunner().invoke(cli, ["completion", "tcsh"]).exit_code == 2


def test_gate_run_passes_help_after_the_command_to_it() -> None:
    import subprocess
    import sys

    script = "import sys; print('argv', sys.argv[1:])"
    done = subprocess.run(
        [sys.executable, "-m", "gate", "run", sys.executable, "-c", script, "--help"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "argv ['--help']" in done.stdout and "Usage: gate run" not in done.stdout


def test_help_groups_the_commands_by_task_and_hides_none() -> None:
    out = CliRunner().invoke(cli, ["--help"]).stdout
    sections = [
        "Run agents through gate:",
        "Answer its questions:",
        "See what was sent:",
        "Rules, secrets and setup:",
    ]
    assert [out.index(s) for s in sections] == sorted(out.index(s) for s in sections)
    assert out.index("  sessions ") > out.index("See what was sent:")
    assert "\nCommands:" not in out
    listed = {
        line.split()[0]
        for line in out.splitlines()
        if line.startswith("  ") and not line.strip().startswith("-")
    }
    with click.Context(cli) as ctx:
        assert set(cli.list_commands(ctx)) <= listed  # every command appears in some section


def test_each_command_is_loaded_from_the_module_that_defines_it() -> None:
    """Commands load lazily by name (gate scan starts without mitmproxy): the name map
    names every command of every gate.cli module, and only those."""
    defined = {}
    for info in pkgutil.iter_modules(gate.cli.__path__):
        module = importlib.import_module(f"gate.cli.{info.name}")
        defined |= {c.name: info.name for c in getattr(module, "COMMANDS", ())}
    assert defined == MODULES
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from gate.cli import cli;"
            " cli(['scan', '--help'], standalone_mode=False);"
            " print('mitmproxy' in sys.modules)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.stdout.strip().endswith("False"), done.stderr
