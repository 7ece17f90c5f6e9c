"""Outputs of commands that come back later (Claude Code background tasks, Codex's running
exec sessions) are decided as the command that started them, through a real listener."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.proxy.server import Listening
from messages import conversation, tool_turn

HARMLESS = "all good: 3 files"  # no denied value: only the pairing can withhold it
WITHHELD = "[gate: content withheld."


def _started(task: str) -> str:
    return (
        f"Command running in background with ID: {task}. Output is being written to:"
        f" /tmp/claude-1000/-p/tasks/{task}.output. You will be notified when it"
        " completes. To check interim output, use TaskOutput."
    )


def _results(provider: FakeProvider) -> list[Any]:
    msgs = provider.seen[-1].json()["messages"]
    return [
        b["content"]
        for m in msgs
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


@pytest.mark.parametrize(
    ("command", "follow_up", "withheld"),
    [
        ("cat .env", ("TaskOutput", {"task_id": "b7k2x9", "block": True, "timeout": 30000}), True),
        ("ls", ("TaskOutput", {"task_id": "b7k2x9", "block": True, "timeout": 30000}), False),
        ("cat .env", ("BashOutput", {"bash_id": "b7k2x9"}), True),  # older Claude Code
        ("cat .env", ("Read", {"file_path": "/tmp/claude-1000/-p/tasks/b7k2x9.output"}), True),
        ("ls", ("Read", {"file_path": "/tmp/claude-1000/-p/tasks/b7k2x9.output"}), False),
        ("cat .env", ("Read", {"file_path": "/tmp/claude-1000/-p/./tasks/b7k2x9.output"}), True),
        (
            "cat .env",
            ("Bash", {"command": "tail -n 50 /tmp/claude-1000/-p/tasks/b7k2x9.output"}),
            True,
        ),
        # A task gate never saw start (compacted away, or made up): the strictest command.
        ("ls", ("TaskOutput", {"task_id": "other1"}), True),
        ("ls", ("TaskOutput", {}), True),
    ],
)
def test_claude_code_background_output_is_decided_as_its_command(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    command: str,
    follow_up: tuple[str, dict[str, Any]],
    withheld: bool,
) -> None:
    project = str(gate_dirs["project"])
    start = tool_turn(
        "t1", "Bash", {"command": command, "run_in_background": True}, _started("b7k2x9")
    )
    later = tool_turn("t2", *follow_up, HARMLESS)
    client.messages.create(**conversation(project, start, later))
    out = _results(provider)[1]
    assert out.startswith(WITHHELD) if withheld else out == HARMLESS
    if withheld and command == "cat .env":
        assert "Read(./.env)" in out


def test_a_task_backgrounded_by_the_user_and_the_next_turn(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = str(gate_dirs["project"])
    start = tool_turn(
        "t1",
        "Bash",
        {"command": "cat .env"},
        "Command was manually backgrounded by user with ID: bz1. Output is"
        " being written to: /tmp/c/tasks/bz1.output",
    )
    client.messages.create(**conversation(project, start))  # kept for its next turn
    later = tool_turn("t2", "TaskOutput", {"task_id": "bz1"}, HARMLESS)
    client.messages.create(**conversation(project, start, later))
    assert _results(provider)[1].startswith(WITHHELD)


@pytest.fixture
def oai(gate: Listening) -> openai.OpenAI:
    return closed_after_test(
        openai.OpenAI(base_url=f"{gate.base_url}/openai/v1", api_key="sk-test", max_retries=0)
    )


def _codex(cmd: str, session: Any) -> list[dict[str, Any]]:
    return [
        {
            "type": "function_call",
            "call_id": "c1",
            "name": "exec_command",
            "arguments": f'{{"cmd": "{cmd}", "yield_time_ms": 10}}',
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": "Chunk ID: 1\nWall time: 0.01 seconds\nProcess running with session ID 7",
        },
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "write_stdin",
            "arguments": f'{{"session_id": {session}, "chars": ""}}',
        },
        {"type": "function_call_output", "call_id": "c2", "output": HARMLESS},
    ]


@pytest.mark.parametrize(
    ("cmd", "session", "withheld"),
    [
        ("sleep 1; cat .env", 7, True),
        ("sleep 1; ls", 7, False),
        ("sleep 1; ls", 8, True),  # a session gate did not see start
    ],
)
def test_codex_write_stdin_output_is_decided_as_the_session_command(
    oai: openai.OpenAI,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    cmd: str,
    session: int,
    withheld: bool,
) -> None:
    env = f"<environment_context><cwd>{gate_dirs['project']}</cwd></environment_context>"
    oai.responses.create(
        model="m",
        input=[
            {"role": "user", "content": [{"type": "input_text", "text": env}]},
            *_codex(cmd, session),
        ],
    )
    out = provider.seen[-1].json()["input"][-1]["output"]
    assert out.startswith(WITHHELD) if withheld else out == HARMLESS


# -- Codex code mode: a yielded exec cell's output comes back through `wait` ---------------


def _cell(script: str, cell: str, follow: dict[str, Any]) -> list[dict[str, Any]]:
    """A code-mode `exec` cell that yielded, and a `wait` on it (or another follow-up)."""
    return [
        {"type": "custom_tool_call", "call_id": "c1", "name": "exec", "input": script},
        {
            "type": "custom_tool_call_output",
            "call_id": "c1",
            "output": [
                {"type": "input_text", "text": f"Script running with cell ID {cell}\n"},
                {"type": "input_text", "text": "Wall time 0.0 seconds\nOutput:\n"},
            ],
        },
        {
            "type": "function_call",
            "call_id": "c2",
            "name": "wait",
            "arguments": json.dumps(follow),
        },
        {"type": "function_call_output", "call_id": "c2", "output": HARMLESS},
    ]


_YIELDS = '// @exec: {"yield_time_ms": 1}\n'


@pytest.mark.parametrize(
    ("script", "cell", "follow", "withheld"),
    [
        (
            _YIELDS + 'text(await tools.exec_command({cmd: "sleep 1; cat .env"}));',
            "3",
            {"cell_id": "3"},
            True,
        ),
        (
            _YIELDS + 'text(await tools.exec_command({cmd: "sleep 1; ls"}));',
            "3",
            {"cell_id": "3"},
            False,
        ),
        # A cell gate did not see yield (compacted away, or made up): the strictest command.
        (
            _YIELDS + 'text(await tools.exec_command({cmd: "sleep 1; ls"}));',
            "3",
            {"cell_id": "4"},
            True,
        ),
        (_YIELDS + 'text(await tools.exec_command({cmd: "sleep 1; ls"}));', "3", {}, True),
        # A cell that reads what an earlier cell stored: what it holds is not in the text.
        ('text(load("k"));', "3", {"cell_id": "3"}, True),
    ],
)
def test_codex_code_mode_wait_output_is_decided_as_its_cell(
    oai: openai.OpenAI,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    script: str,
    cell: str,
    follow: dict[str, Any],
    withheld: bool,
) -> None:
    env = f"<environment_context><cwd>{gate_dirs['project']}</cwd></environment_context>"
    oai.responses.create(
        model="m",
        input=[
            {"role": "user", "content": [{"type": "input_text", "text": env}]},
            *_cell(script, cell, follow),
        ],  # type: ignore[list-item]
    )
    out = provider.seen[-1].json()["input"][-1]["output"]
    assert out.startswith(WITHHELD) if withheld else out == HARMLESS


def test_a_code_mode_cell_that_loads_stored_values_is_withheld(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    """`store()` keeps a value across cells: a cell that only `load()`s one prints what an
    earlier cell read (`cat .env`, say) without naming it."""
    env = f"<environment_context><cwd>{gate_dirs['project']}</cwd></environment_context>"
    oai.responses.create(
        model="m",
        input=[
            {"role": "user", "content": [{"type": "input_text", "text": env}]},
            {
                "type": "custom_tool_call",
                "call_id": "c1",
                "name": "exec",
                "input": 'text(btoa(load("k")));',
            },
            {
                "type": "custom_tool_call_output",
                "call_id": "c1",
                "output": [{"type": "input_text", "text": HARMLESS}],
            },
        ],  # type: ignore[list-item]
    )
    out = provider.seen[-1].json()["input"][-1]["output"]
    assert WITHHELD in json.dumps(out)
