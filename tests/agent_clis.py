"""Real agent CLIs driven headless against a loopback fake model: one table for all of them.

Each `Case` says how to start one agent non-interactively with fake keys and its
non-essential traffic off, which of its tools the fake model calls, and where its requests
go. tests/agents/test_*_cli.py run a case through `gate run`; tests/corpus/capture.py runs
one straight at the fake to record what the agent sends. Binaries are found on PATH or in
GATE_TEST_<AGENT>_BIN, e.g. GATE_TEST_CODEX_BIN=/tmp/agents/node_modules/.bin/codex.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socketserver
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agent_script import ANTHROPIC, CHAT, GEMINI, RESPONSES, Call
from loopback import LoopbackServer

PROMPT = "Show me what is in .env"
# Variables that could point an agent at a real account, provider, config or proxy.
_SCRUB_PREFIXES = (
    "ANTHROPIC_",
    "OPENAI_",
    "GEMINI_",
    "GOOGLE_",
    "COPILOT_",
    "CODEX_",
    "OPENCODE_",
    "AIDER_",
    "CLAUDE_",
    "GH_",
    "GITHUB_",
    "LITELLM_",
    "XDG_",
    "AZURE_",
    "AWS_",
    "NODE_OPTIONS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
    "no_proxy",
)


def fake_key(prefix: str) -> str:
    return prefix + os.urandom(8).hex()


@dataclass(frozen=True)
class Case:
    agent: str  # gate's name for it (gate/agents/registry.py)
    name: str  # corpus file: tests/corpus/<agent>/<name>.json
    exe: str  # executable looked up on PATH
    format: str  # the wire format its requests use here
    upstream: str  # gate upstream its requests go to
    argv: Callable[[str], list[str]]  # arguments after the executable, for a prompt
    calls: Callable[[Path], tuple[Call, ...]]  # what the fake model asks for, in order
    env: Callable[[], dict[str, str]] = dict  # fake keys and quiet switches (run time)
    home: Mapping[str, str] = field(default_factory=dict)  # files written under HOME
    # The variable naming the user's own provider, which gate inherits as the upstream
    # (Copilot BYOK); None: the test passes --upstream NAME=fake instead.
    inherit: str | None = None
    answer: str = "done"  # the fake model's last reply

    @property
    def bin_env(self) -> str:
        return f"GATE_TEST_{self.exe.upper()}_BIN"

    def binary(self) -> str | None:
        """The agent's executable: GATE_TEST_<EXE>_BIN, else PATH; None when absent."""
        named = os.environ.get(self.bin_env)
        return shutil.which(named) if named else shutil.which(self.exe)


def _calls(*make: Callable[[Path], Call]) -> Callable[[Path], tuple[Call, ...]]:
    return lambda project: tuple(m(project) for m in make)


_CAT = {"command": "cat .env", "description": "Show .env"}
_CODEX_QUIET = [
    "-c",
    "analytics.enabled=false",
    "-c",
    "features.plugins=false",
    "-c",
    "check_for_update_on_startup=false",
]
_OPENCODE_ENV = {"OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_AUTOUPDATE": "1"}
_GEMINI_SETTINGS = (
    '{"security": {"auth": {"selectedType": "gemini-api-key"}},'
    ' "privacy": {"usageStatisticsEnabled": false},'
    ' "telemetry": {"enabled": false}}'
)


def _opencode(name: str, fmt: str, upstream: str, model: str, key_var: str) -> Case:
    return Case(
        "opencode",
        name,
        "opencode",
        fmt,
        upstream,
        lambda p: ["run", "--pure", "--auto", "-m", model, p],
        _calls(
            lambda d: Call("read", {"filePath": str(d / ".env")}),
            lambda d: Call("bash", dict(_CAT)),
        ),
        lambda: {**_OPENCODE_ENV, key_var: fake_key("fake-")},
    )


def _copilot(name: str, fmt: str, wire: str) -> Case:
    return Case(
        "copilot",
        name,
        "copilot",
        fmt,
        "copilot",
        lambda p: ["-p", p, "--allow-all-tools"],
        _calls(
            lambda d: Call("view", {"path": str(d / ".env")}), lambda d: Call("bash", dict(_CAT))
        ),
        lambda: {
            "COPILOT_PROVIDER_API_KEY": fake_key("sk-fake-"),
            "COPILOT_MODEL": "gpt-5",
            "COPILOT_PROVIDER_WIRE_API": wire,
            "COPILOT_OFFLINE": "true",
        },
        inherit="COPILOT_PROVIDER_BASE_URL",
    )


CASES: tuple[Case, ...] = (
    Case(
        "claude-code",
        "read-and-bash",
        "claude",
        ANTHROPIC,
        "anthropic",
        lambda p: ["-p", p, "--allowedTools", "Read,Bash", "--no-session-persistence"],
        _calls(
            lambda d: Call("Read", {"file_path": str(d / ".env")}),
            lambda d: Call("Bash", dict(_CAT)),
        ),
        lambda: {
            "ANTHROPIC_API_KEY": fake_key("sk-ant-fake-"),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        },
    ),
    # Codex has no read tool: it reads with shell commands. A named model keeps the classic
    # tools; Codex 0.171's default model gets "code mode" (one JavaScript `exec` tool).
    Case(
        "codex",
        "exec-command",
        "codex",
        RESPONSES,
        "openai",
        lambda p: [*_CODEX_QUIET, "-m", "gpt-5.1-codex", "exec", "--skip-git-repo-check", p],
        _calls(
            lambda d: Call("exec_command", {"cmd": "sed -n 1,20p .env", "workdir": str(d)}),
            lambda d: Call("exec_command", {"cmd": "cat .env"}),
        ),
        lambda: {"CODEX_API_KEY": fake_key("sk-fake-")},
    ),
    Case(
        "codex",
        "code-mode",
        "codex",
        RESPONSES,
        "openai",
        lambda p: [*_CODEX_QUIET, "-m", "gpt-6.2-sol", "exec", "--skip-git-repo-check", p],
        _calls(
            lambda d: Call(
                "exec",
                {},
                custom="const r = await tools.exec_command("
                f'{{cmd: "sed -n 1,20p {d / ".env"}"}});\ntext(r);',
            ),
            lambda d: Call("exec", {}, custom='text(await tools.exec_command({cmd: "cat .env"}));'),
        ),
        lambda: {"CODEX_API_KEY": fake_key("sk-fake-")},
    ),
    _opencode(
        "anthropic", ANTHROPIC, "anthropic", "anthropic/claude-sonnet-4-5", "ANTHROPIC_API_KEY"
    ),
    _opencode("openai", RESPONSES, "openai", "openai/gpt-5", "OPENAI_API_KEY"),
    _opencode("google", GEMINI, "gemini", "google/gemini-2.5-pro", "GOOGLE_GENERATIVE_AI_API_KEY"),
    # Gemini CLI refuses read_file on `.env` itself (a blocked path segment), so its read
    # goes to `.env.local`, which gate's default rules deny as well.
    Case(
        "gemini-cli",
        "read-and-shell",
        "gemini",
        GEMINI,
        "gemini",
        lambda p: ["-m", "gemini-2.5-pro", "-p", p, "--yolo"],
        _calls(
            lambda d: Call("read_file", {"file_path": str(d / ".env.local")}),
            lambda d: Call("run_shell_command", dict(_CAT)),
        ),
        lambda: {"GEMINI_API_KEY": fake_key("fake-"), "GEMINI_CLI_TRUST_WORKSPACE": "true"},
        home={".gemini/settings.json": _GEMINI_SETTINGS},
    ),
    _copilot("completions", CHAT, "completions"),
    _copilot("responses", RESPONSES, "responses"),
    # Aider has no tools: a file named on its command line is pasted into a user message.
    Case(
        "aider",
        "added-file",
        "aider",
        CHAT,
        "openai",
        lambda p: [
            "--model",
            "openai/gpt-4o",
            "--no-check-update",
            "--analytics-disable",
            "--no-show-release-notes",
            "--no-git",
            "--yes-always",
            "--no-pretty",
            "--no-fancy-input",
            "--message",
            p,
            ".env",
        ],
        lambda d: (),
        lambda: {"OPENAI_API_KEY": fake_key("sk-fake-"), "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        answer="The file defines one variable.",
    ),
)


def case(agent: str, name: str) -> Case:
    return next(c for c in CASES if (c.agent, c.name) == (agent, name))


def project_files(project: Path, secret: str) -> None:
    """A project whose .env (and .env.local) hold a fake value that must never leave."""
    (project / ".env").write_text(f"API_TOKEN={secret}\n")
    (project / ".env.local").write_text(f"API_TOKEN={secret}\n")
    (project / "app.py").write_text("print('hello')\n")


def environment(c: Case, home: Path, project: Path, proxy: str) -> dict[str, str]:
    """A clean environment: fake keys, a private HOME, and every proxy pointing at a
    loopback black hole so nothing the agent sends outside gate can leave the machine."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUB_PREFIXES)}
    env.update(
        HOME=str(home),
        PWD=str(project),
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy"):
        env[var] = proxy
    for rel, text in c.home.items():
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text(text)
    env.update(c.env())
    return env


class BlackHole(LoopbackServer):
    """A loopback 'proxy' that records what an agent tried to reach outside, and drops it."""

    def __init__(self) -> None:
        tried: list[str] = []

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                with contextlib.suppress(OSError):
                    line = self.request.recv(512).split(b"\r\n", 1)[0]
                    tried.append(line.decode("latin-1"))

        self.tried = tried
        self.serve(Handler, socketserver.ThreadingTCPServer)
