"""The calls an Assistants run asks outputs for, read from a reply as it streams past."""

from __future__ import annotations

import json

import pytest

from gate.providers.openai_assistants import run_key
from gate.proxy.chains import RunCallsTap

RUN = {
    "id": "run_Q1",
    "object": "thread.run",
    "thread_id": "thread_Z9",
    "status": "requires_action",
    "required_action": {
        "type": "submit_tool_outputs",
        "submit_tool_outputs": {
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": ".env"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": ".en'},
                },
            ]
        },
    },
}


@pytest.mark.parametrize("size", [1, 7, 10_000])
def test_a_streamed_run_is_read_whatever_the_chunking(size: int) -> None:
    stream = (
        b'event: thread.run.created\ndata: {"id": "run_Q1"}\n\n'
        b"event: thread.run.requires_action\ndata: "
        + json.dumps(RUN).encode()
        + b"\n\nevent: done\ndata: [DONE]\n\n"
    )
    tap = RunCallsTap()
    for i in range(0, len(stream), size):
        tap.feed(stream[i : i + size])
    calls = tap.runs[run_key("thread_Z9", "run_Q1")]
    assert calls["call_1"] == ("read_file", {"path": ".env"})
    assert "\x00gate:unparsed" in calls["call_2"][1]  # cut short: the strictest target


def test_a_list_of_runs_and_replies_that_are_not_runs() -> None:
    tap = RunCallsTap()
    tap.read_json(json.dumps({"object": "list", "data": [RUN, {"object": "thread.run"}]}))
    tap.read_json(b"not json")
    tap.read_json(json.dumps({**RUN, "object": "thread.message"}))
    assert list(tap.runs) == [run_key("thread_Z9", "run_Q1")]
    assert run_key("thread_Z9", "run_Q1") != run_key("thread_Z9", "run_Q2")
