"""Tool outputs gate cannot tie to a call it saw, or to a file: decided as the strictest call
they could answer (through a real listener, asserting on what the upstream received)."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai
import orjson
import pytest

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.agents import tools
from gate.proxy.server import Listening
from gate.rules.layers import PolicyStore
from gate.rules.model import Effect
from gate.screen.request import Outbound, screen
from messages import conversation, tool_turn

# An output with no denied value in it: only the call it answers can get it withheld.
HARMLESS = "all good: 3 files"


@pytest.fixture
def oai(gate: Listening) -> openai.OpenAI:
    return closed_after_test(
        openai.OpenAI(base_url=f"{gate.base_url}/openai/v1", api_key="sk-test", max_retries=0)
    )


def test_an_output_whose_call_gate_never_saw_is_withheld(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    # After a restart, a Responses turn continues a response gate does not know.
    oai.responses.create(
        model="m",
        previous_response_id="resp_from_before_the_restart",
        input=[{"type": "function_call_output", "call_id": "call_a", "output": HARMLESS}],
    )
    sent = provider.seen[-1].json()["input"][0]
    assert sent["call_id"] == "call_a"
    assert sent["output"].startswith("[gate: content withheld. a tool call gate did not see")


def test_arguments_that_do_not_parse_are_the_strictest_call(
    oai: openai.OpenAI, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    oai.chat.completions.create(
        model="m",
        messages=[
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": ".env"'},
                    }
                ],
            },  # cut short
            {"role": "tool", "tool_call_id": "c1", "content": HARMLESS},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c2",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": '{"path": "README.md"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c2", "content": HARMLESS},
        ],
    )
    msgs = provider.seen[-1].json()["messages"]
    assert msgs[2]["content"].startswith("[gate: content withheld.")
    assert msgs[4]["content"] == HARMLESS  # a call that parses is decided by its target


@pytest.mark.parametrize(
    ("name", "tool_input"),
    [
        ("mcp__filesystem__read_text_file", {"path": ".env"}),
        ("mcp__fs__read_multiple_files", {"paths": ["README.md", ".env"]}),
        ("filesystem_read_file", {"path": ".env"}),  # OpenCode names MCP tools server_tool
        ("write_stdin", {"session_id": 3, "chars": "cat .env\n"}),  # Codex's running shell
    ],
)
def test_tools_that_read_files_by_other_names(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    gate_dirs: dict[str, Path],
    name: str,
    tool_input: dict[str, object],
) -> None:
    project = str(gate_dirs["project"])
    client.messages.create(**conversation(project, tool_turn("t1", name, tool_input, HARMLESS)))
    result = provider.seen[-1].json()["messages"][2]["content"][0]["content"]
    assert result.startswith("[gate: content withheld.") and "Read(" in result


@pytest.mark.parametrize(
    ("script", "effect"),
    [
        ('await tools.exec_command({cmd: "cat README.md"})', None),
        ('await tools.exec_command({cmd: "cat .env"})', Effect.DENY),
        ('const f = ".e" + "nv"; await tools.exec_command({cmd: `cat ${f}`})', Effect.DENY),
        ('const c = atob("Y2F0IC5lbnY="); await tools.exec_command({cmd: c})', Effect.DENY),
    ],
)
def test_codex_code_mode_cells_built_at_run_time_are_the_strictest_read(
    gate_dirs: dict[str, Path], script: str, effect: Effect | None
) -> None:
    root = str(gate_dirs["project"])
    action = tools.action("exec", {"input": script}, root)
    assert PolicyStore().policy_for(root).decide(action, root).effect is effect


def test_gemini_responses_without_ids_get_the_strictest_same_name_call(
    gate_dirs: dict[str, Path],
) -> None:
    project = gate_dirs["project"]
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": f"Workspace Directories:\n - {project}"}]},
            {
                "role": "model",
                "parts": [
                    {"functionCall": {"name": "read_file", "args": {"file_path": "README.md"}}},
                    {"functionCall": {"name": "read_file", "args": {"file_path": ".env"}}},
                ],
            },
            # Which response answers which call is a matter of order only: swapped here.
            {
                "role": "user",
                "parts": [
                    {"functionResponse": {"name": "read_file", "response": {"output": HARMLESS}}},
                    {"functionResponse": {"name": "read_file", "response": {"output": HARMLESS}}},
                ],
            },
        ]
    }
    verdict = screen(
        Outbound(
            path="/v1beta/models/gemini-x:generateContent",
            body=orjson.dumps(body),
            agent="gemini",
            project_root=str(project),
        ),
        PolicyStore(),
    )
    assert verdict.body is not None
    parts = json.loads(verdict.body)["contents"][2]["parts"]
    assert all("content withheld" in p["functionResponse"]["response"]["output"] for p in parts)
