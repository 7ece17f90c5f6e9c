"""`gate run` and `gate env` for agents wired by flags (Codex) or only with their own
provider (Copilot CLI), via the real CLI; the agents are small stand-in scripts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from fake_provider import FakeProvider
from gate.cli import cli

GATE = [sys.executable, "-m", "gate"]
# A stand-in agent: prints the arguments and the wiring variables it was started with.
STANDIN = """#!{python}
import json, os, sys
print(json.dumps({{"argv": sys.argv[1:], "env": {{k: v for k, v in os.environ.items()
                  if k.startswith(("COPILOT_", "OPENCODE_"))}}}}))
"""


def standin(where: Path, name: str) -> Path:
    exe = where / name
    exe.write_text(STANDIN.format(python=sys.executable))
    exe.chmod(0o755)
    return exe


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("COPILOT_")}
    return subprocess.run(
        [*GATE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**full, **env},
        check=False,
    )


def test_gate_run_puts_codex_flags_right_after_its_name(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    codex = standin(gate_dirs["home"], "codex")
    proc = _run(
        ["run", "--upstream", f"openai={provider.url}", "--", str(codex), "exec", "--json", "hi"],
        gate_dirs["project"],
    )
    assert proc.returncode == 0, proc.stderr
    argv = json.loads(proc.stdout)["argv"]
    assert argv[0] == "-c" and argv[1].startswith('model_providers.gate={name="gate"')
    assert "/_run/" in argv[1] and '/openai/v1",wire_api="responses"' in argv[1]
    assert argv[2:] == ["-c", "model_provider=gate", "exec", "--json", "hi"]


def test_gate_run_copilot_needs_a_provider_of_its_own(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    copilot = standin(gate_dirs["home"], "copilot")
    proc = _run(["run", "--", str(copilot), "-p", "hi"], gate_dirs["project"])
    assert proc.returncode == 1 and proc.stdout == ""
    assert "copilot is wired to /copilot, but gate has no upstream 'copilot'" in proc.stderr
    assert "COPILOT_PROVIDER_BASE_URL" in proc.stderr

    proc = _run(
        ["run", "--", str(copilot), "-p", "hi"],
        gate_dirs["project"],
        COPILOT_PROVIDER_BASE_URL=f"{provider.url}/v1",
        COPILOT_PROVIDER_TYPE="openai",
    )
    assert proc.returncode == 0, proc.stderr
    assert f"/copilot forwards to {provider.url}/v1" in proc.stderr
    env = json.loads(proc.stdout)["env"]
    assert "/_run/" in env["COPILOT_PROVIDER_BASE_URL"]
    assert env["COPILOT_PROVIDER_BASE_URL"].endswith("/copilot")
    assert env["COPILOT_PROVIDER_TRANSPORT"] == "http"
    assert env["COPILOT_PROVIDER_TYPE"] == "openai"  # the user's own choice is kept


def test_gate_run_opencode_passes_a_config_overlay(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    opencode = standin(gate_dirs["home"], "opencode")
    proc = _run(
        ["run", "--upstream", f"anthropic={provider.url}", "--", str(opencode), "run"],
        gate_dirs["project"],
    )
    assert proc.returncode == 0, proc.stderr
    overlay = json.loads(json.loads(proc.stdout)["env"]["OPENCODE_CONFIG_CONTENT"])
    assert overlay["provider"]["anthropic"]["options"]["baseURL"].endswith("/anthropic/v1")


def test_gate_env_prints_an_alias_for_codex() -> None:
    result = CliRunner().invoke(cli, ["env", "--no-check", "--agent", "codex"])
    assert result.exit_code == 0
    assert result.stdout.startswith("alias codex='codex -c ")
    assert "http://127.0.0.1:8787/openai/v1" in result.stdout
    assert "export" not in result.stdout


def test_gate_env_warns_when_copilot_has_no_upstream() -> None:
    result = CliRunner().invoke(cli, ["env", "--no-check", "--agent", "copilot"])
    assert result.exit_code == 0
    assert "export COPILOT_PROVIDER_BASE_URL=http://127.0.0.1:8787/copilot" in result.stdout
    assert "no upstream 'copilot'" in result.stderr


def test_gate_env_routes_gemini_cli_both_ways() -> None:
    """API-key traffic and Google sign-in (Code Assist) traffic both go through gate."""
    result = CliRunner().invoke(cli, ["env", "--no-check", "--agent", "gemini-cli"])
    assert result.exit_code == 0, result.output
    assert "export GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:8787/gemini\n" in result.stdout
    assert "export CODE_ASSIST_ENDPOINT=http://127.0.0.1:8787/code-assist\n" in result.stdout
