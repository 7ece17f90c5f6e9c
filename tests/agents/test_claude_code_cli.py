"""The real Claude Code CLI through `gate run`, against the loopback fake provider.

Skipped unless a `claude` binary is on PATH or named by GATE_TEST_CLAUDE_BIN, e.g.:
    mkdir -p /tmp/cc && cd /tmp/cc && npm install @anthropic-ai/claude-code
    GATE_TEST_CLAUDE_BIN=/tmp/cc/node_modules/.bin/claude pytest tests/agents -q
Everything stays on 127.0.0.1: the fake provider is the only upstream, Claude Code's
non-essential traffic (telemetry, update checks, connectivity probes) is switched off, and
the API key and the .env value are fakes made at run time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fake_provider import FakeProvider

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]

BIN_ENV = "GATE_TEST_CLAUDE_BIN"
RUN_TIMEOUT = 180  # seconds for the whole `gate run -- claude -p ...`
PLACEHOLDER = "[gate: content withheld."
# Variables that could point Claude Code at a real account, provider or config instead.
_SCRUB = (
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_MODEL",
    "ANTHROPIC_SMALL_FAST_MODEL",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CODE_USE_FOUNDRY",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_FOUNDRY_BASE_URL",
    "CLAUDE_CONFIG_DIR",
    "NODE_OPTIONS",
    "ALL_PROXY",
    "all_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
)
_QUIET = {
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "DISABLE_AUTOUPDATER": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "NO_PROXY": "127.0.0.1,localhost",
}


def claude_bin() -> str:
    """The Claude Code binary to test, or skip."""
    named = os.environ.get(BIN_ENV)
    if named:
        path = shutil.which(named)
        if path is None:
            pytest.fail(f"{BIN_ENV}={named!r} is not an executable file")
        return path
    found = shutil.which("claude")
    if found is None:
        pytest.skip(
            f"no `claude` on PATH and {BIN_ENV} unset (npm install @anthropic-ai/claude-code)"
        )
    return found


def _has_tool_result(message: Any) -> bool:
    content = message.get("content") if isinstance(message, dict) else None
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def read_then_done(env_file: Path) -> Any:
    """Script: the agent's first turn asks to Read .env; the turn with its result says done."""

    def script(path: str, req: dict[str, Any]) -> list[dict[str, Any]]:
        tools = {t.get("name") for t in req.get("tools") or () if isinstance(t, dict)}
        messages = req.get("messages") or [{}]
        if "Read" not in tools or req.get("max_tokens") == 1:
            # Side requests (title generation, quota probes): a short plain answer.
            return [{"type": "text", "text": "ok"}]
        if _has_tool_result(messages[-1]):
            return [{"type": "text", "text": "done"}]
        return [
            {
                "type": "tool_use",
                "id": "toolu_gate_test_" + os.urandom(4).hex(),
                "name": "Read",
                "input": {"file_path": str(env_file)},
            }
        ]

    return script


def test_claude_code_read_of_env_is_withheld(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    claude = claude_bin()
    project = gate_dirs["project"].resolve()
    secret = "fake-" + os.urandom(16).hex()
    env_file = project / ".env"
    env_file.write_text(f"API_TOKEN={secret}\n")
    provider.script = read_then_done(env_file)

    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update(_QUIET)
    env["ANTHROPIC_API_KEY"] = "sk-ant-fake-" + os.urandom(8).hex()
    env["CLAUDE_CONFIG_DIR"] = str(gate_dirs["home"] / ".claude")
    gate = [sys.executable, "-m", "gate"]
    cmd = [
        *gate,
        "run",
        "--upstream",
        f"anthropic={provider.url}",
        "--",
        claude,
        "-p",
        "read .env",
        "--allowedTools",
        "Read",
        "--no-session-persistence",
    ]
    try:
        done = subprocess.run(
            cmd,
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"`gate run -- claude` did not finish in {RUN_TIMEOUT}s: {exc.stderr!r}")
    assert done.returncode == 0, f"stdout={done.stdout!r} stderr={done.stderr[-2000:]!r}"
    assert "done" in done.stdout

    messages = [s for s in provider.seen if s.path.split("?", 1)[0] == "/v1/messages"]
    assert len(messages) >= 2, [s.path for s in provider.seen]
    for seen in provider.seen:
        assert secret.encode() not in seen.body, f"the .env value reached {seen.path}"
        assert all(secret not in v for v in seen.headers.values())
        assert "x-api-key" in seen.headers or "authorization" in seen.headers or not seen.body

    # The request carrying the Read result has gate's placeholder in place of the content.
    results = [
        b
        for s in messages
        for m in s.json()["messages"]
        if _has_tool_result(m)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]
    assert results, "Claude Code never sent the Read result back"
    for block in results:
        content = block["content"]
        text = content if isinstance(content, str) else json.dumps(content)
        assert text.startswith(PLACEHOLDER) or PLACEHOLDER in text
        assert str(env_file) in text

    # The audit has the rows, says what was withheld, and never holds the value.
    log = subprocess.run(
        [*gate, "log", "--json"], env=env, capture_output=True, text=True, timeout=60, check=True
    )
    rows = json.loads(log.stdout)["requests"]
    modified = [r for r in rows if r["verdict"] == "modified"]
    assert modified, rows
    assert all(r["agent"] == "claude-code" and r["project_root"] == str(project) for r in modified)
    withheld = modified[0]["withheld"][0]
    assert (withheld["tool"], withheld["target"]) == ("Read", str(env_file))
    assert withheld["rule"] == "Read(./.env)"
    for f in gate_dirs["data"].rglob("*"):
        if f.is_file():
            assert secret.encode() not in f.read_bytes(), f"{f} holds the .env value"


def test_claude_code_later_turns_reuse_all_but_the_last_message(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """Six reads in a row: from the third request on, gate screens only what each turn
    added (Claude Code moves its cache mark to the newest message, so the previous last
    message is the one that changed), and the .env value still never leaves."""
    claude = claude_bin()
    project = gate_dirs["project"].resolve()
    secret = "fake-" + os.urandom(16).hex()
    (project / ".env").write_text(f"API_TOKEN={secret}\n")
    for i in range(6):
        (project / f"f{i}.py").write_text(f"print({i})\n" * 100)
    reads = [project / f"f{i}.py" for i in range(5)]
    reads.insert(2, project / ".env")

    def script(path: str, req: dict[str, Any]) -> list[dict[str, Any]]:
        tools = {t.get("name") for t in req.get("tools") or () if isinstance(t, dict)}
        if "Read" not in tools or req.get("max_tokens") == 1:
            return [{"type": "text", "text": "ok"}]
        done = sum(1 for m in req.get("messages") or () if _has_tool_result(m))
        if done >= len(reads):
            return [{"type": "text", "text": "done"}]
        return [
            {
                "type": "tool_use",
                "id": "toolu_gate_test_" + os.urandom(4).hex(),
                "name": "Read",
                "input": {"file_path": str(reads[done])},
            }
        ]

    provider.script = script
    env = {k: v for k, v in os.environ.items() if k not in _SCRUB}
    env.update(_QUIET, GATE_LOG_LEVEL="DEBUG")
    env["ANTHROPIC_API_KEY"] = "sk-ant-fake-" + os.urandom(8).hex()
    env["CLAUDE_CONFIG_DIR"] = str(gate_dirs["home"] / ".claude")
    cmd = [
        sys.executable,
        "-m",
        "gate",
        "run",
        "--upstream",
        f"anthropic={provider.url}",
        "--",
        claude,
        "-p",
        "read the files",
        "--allowedTools",
        "Read",
        "--no-session-persistence",
    ]
    done = subprocess.run(
        cmd,
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0 and "done" in done.stdout, done.stderr[-2000:]
    assert all(secret.encode() not in s.body for s in provider.seen)
    log = (gate_dirs["data"] / "gate.log").read_text()
    reused = [line.split("next turn: ", 1)[1] for line in log.splitlines() if "next turn: " in line]
    counts = [(int(r.split()[0]), int(r.split()[2])) for r in reused]  # (reused, of)
    assert len(counts) >= len(reads) - 1, log[-3000:]
    assert all(k >= n - 1 for k, n in counts[1:]), counts
