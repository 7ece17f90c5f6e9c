"""Assistants `submit_tool_outputs` paired with the calls the run asked for, as gate saw
them in an earlier reply (through a real listener, with the real openai SDK)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import openai
import pytest

from conftest import closed_after_test
from fake_provider import FakeProvider
from gate.proxy.server import Listening

pytestmark = pytest.mark.filterwarnings(
    "ignore:The Assistants API is deprecated:DeprecationWarning"
)

HARMLESS = "all good: 3 files"  # no denied value: only the pairing can withhold it
WITHHELD = "[gate: content withheld."


def _run(thread: str, run: str, calls: dict[str, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return {
        "id": run,
        "object": "thread.run",
        "thread_id": thread,
        "assistant_id": "asst_1",
        "status": "requires_action",
        "created_at": 1,
        "model": "m",
        "instructions": "",
        "tools": [],
        "parallel_tool_calls": True,
        "required_action": {
            "type": "submit_tool_outputs",
            "submit_tool_outputs": {
                "tool_calls": [
                    {
                        "id": i,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps(args)},
                    }
                    for i, (name, args) in calls.items()
                ]
            },
        },
    }


@pytest.fixture
def runs(provider: FakeProvider, gate_dirs: dict[str, Path]) -> dict[str, dict[str, Any]]:
    """The fake's runs, by `thread/run`: creating or fetching one answers with it."""
    project = gate_dirs["project"]
    table = {
        "thread_a/run_a": _run(
            "thread_a",
            "run_a",
            {
                "call_1": ("read_file", {"path": str(project / "README.md")}),
                "call_2": ("lookup_weather", {"city": "Oslo"}),
            },
        ),
        "thread_Bq/run_Bq": _run(
            "thread_Bq",
            "run_Bq",
            {  # the same call id, another thread
                "call_1": ("read_file", {"path": str(project / ".env")})
            },
        ),
    }

    def answer(method: str, path: str, req: Any) -> Any:
        parts = path.split("?")[0].split("/")
        if "threads" not in parts or "runs" not in parts:
            return None
        thread = parts[parts.index("threads") + 1]
        if path.split("?")[0].endswith("/runs"):  # a new run: the thread's first
            return next((r for k, r in table.items() if k.startswith(thread + "/")), None)
        return table.get(f"{thread}/{parts[parts.index('runs') + 1]}")

    provider.answer = answer
    return table


@pytest.fixture
def oai(gate: Listening) -> openai.OpenAI:
    return closed_after_test(
        openai.OpenAI(base_url=f"{gate.base_url}/openai/v1", api_key="sk-test", max_retries=0)
    )


def _submit(
    oai: openai.OpenAI, provider: FakeProvider, thread: str, run: str, outputs: dict[str, str]
) -> list[str]:
    oai.beta.threads.runs.submit_tool_outputs(
        run,
        thread_id=thread,
        tool_outputs=[{"tool_call_id": i, "output": o} for i, o in outputs.items()],
    )
    return [o["output"] for o in provider.seen[-1].json()["tool_outputs"]]


def test_outputs_are_decided_as_the_calls_the_run_asked_for(
    oai: openai.OpenAI, provider: FakeProvider, runs: dict[str, Any]
) -> None:
    oai.beta.threads.runs.create("thread_a", assistant_id="asst_1")
    oai.beta.threads.runs.create("thread_Bq", assistant_id="asst_1")
    a = _submit(oai, provider, "thread_a", "run_a", {"call_1": HARMLESS, "call_2": HARMLESS})
    assert a == [HARMLESS, HARMLESS]  # a README read and a tool no rule names
    b = _submit(oai, provider, "thread_Bq", "run_Bq", {"call_1": HARMLESS})
    assert b[0].startswith(WITHHELD) and "Read(./.env)" in b[0]  # call_1 here read .env


def test_a_run_fetched_later_pairs_too(
    oai: openai.OpenAI, provider: FakeProvider, runs: dict[str, Any]
) -> None:
    oai.beta.threads.runs.retrieve("run_Bq", thread_id="thread_Bq")  # polling, as SDKs do
    b = _submit(oai, provider, "thread_Bq", "run_Bq", {"call_1": HARMLESS})
    assert b[0].startswith(WITHHELD) and "Read(./.env)" in b[0]


@pytest.mark.parametrize(
    ("thread", "run", "call"),
    [
        ("thread_a", "run_a", "call_9"),  # an id the run never asked for
        ("thread_Bq", "run_Bq", "call_2"),  # an id of another thread's run
        ("thread_c", "run_c", "call_1"),  # a run gate never saw (a restart)
        ("thread_a", "run_Bq", "call_1"),  # a run id under another thread
    ],
)
def test_outputs_gate_cannot_pair_are_the_strictest_call(
    oai: openai.OpenAI,
    provider: FakeProvider,
    runs: dict[str, Any],
    thread: str,
    run: str,
    call: str,
) -> None:
    oai.beta.threads.runs.create("thread_a", assistant_id="asst_1")
    oai.beta.threads.runs.create("thread_Bq", assistant_id="asst_1")
    out = _submit(oai, provider, thread, run, {call: HARMLESS})
    assert out[0].startswith(WITHHELD)
