"""A block reads to the real agent as gate's refusal, shown once as a plain error: not as a
sign-in problem ("Failed to authenticate", "/login"), and not retried."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fake_provider import FakeProvider
from gate.proxy.server import Listening

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(180)]
UNKNOWN_RUN = "/_run/0123456789abcdef"  # gate blocks a run it does not know


def agent_env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "TERM", "TMPDIR")
    return {
        **{k: v for k, v in os.environ.items() if k in keep},
        "HOME": str(home),
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
    }


def test_claude_code_shows_the_block_as_gate_s_error(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    claude = shutil.which("claude") or pytest.skip("claude is not installed")
    env = agent_env(gate_dirs["home"]) | {
        "ANTHROPIC_BASE_URL": f"{gate.base_url}{UNKNOWN_RUN}/anthropic",
        "ANTHROPIC_API_KEY": "sk-ant-fake-" + os.urandom(6).hex(),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    done = subprocess.run(
        [claude, "-p", "hi", "--no-session-persistence"],
        env=env,
        cwd=gate_dirs["project"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    out = done.stdout + done.stderr
    assert "gate blocked this request" in out and "does not know run" in out, out
    assert "authenticate" not in out.lower() and "/login" not in out, out
    assert provider.seen == []


def test_codex_shows_the_block_once_without_retrying(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    codex = shutil.which("codex") or pytest.skip("codex is not installed")
    prov = (
        f'{{name="gate",base_url="{gate.base_url}{UNKNOWN_RUN}/openai/v1",'
        'wire_api="responses",requires_openai_auth=true}'
    )
    env = agent_env(gate_dirs["home"]) | {"CODEX_API_KEY": "sk-fake-" + os.urandom(6).hex()}
    done = subprocess.run(
        [
            codex,
            "-c",
            "analytics.enabled=false",
            "-c",
            "check_for_update_on_startup=false",
            "-c",
            f"model_providers.gate={prov}",
            "-c",
            "model_provider=gate",
            "-m",
            "gpt-5.1-codex",
            "exec",
            "--skip-git-repo-check",
            "hi",
        ],
        env=env,
        cwd=gate_dirs["project"],
        capture_output=True,
        text=True,
        timeout=150,
        stdin=subprocess.DEVNULL,
    )
    out = done.stdout + done.stderr
    assert "gate blocked this request" in out, out
    assert "Reconnecting" not in out and "Forbidden" not in out, out
