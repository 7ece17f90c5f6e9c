"""The Gemini walker: roles, call/response pairing by id and by order, withholding in place."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from gate.agents import tools
from gate.providers import detect, gemini
from gate.providers.segments import Role
from gemini_messages import code_assist, conversation, session_context, tool_turn


def _parts(body: dict[str, Any], i: int) -> list[dict[str, Any]]:
    return body["contents"][i]["parts"]  # type: ignore[no-any-return]


def test_walk_finds_every_string_with_its_role() -> None:
    body = conversation(
        "/p",
        tool_turn(
            "read_file",
            {"file_path": "/p/a.py"},
            "print(1)",
            response_id="read_file-1-a",
            signature="c2lnbmVk",
        ),
    )
    body["contents"].append(
        {
            "role": "model",
            "parts": [
                {"text": "thinking about it", "thought": True},
                {"text": "Done."},
                {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                {"executableCode": {"language": "PYTHON", "code": "print(2)"}},
            ],
        }
    )
    walk = gemini.walk(body)
    roles = {s.text: s.role for s in walk.segments}
    assert roles["You are Gemini CLI."] is Role.SYSTEM
    assert roles["Reads a file."] is Role.SYSTEM  # tools
    assert roles["help me with this project"] is Role.USER_TEXT
    assert roles["/p/a.py"] is Role.TOOL_CALL
    assert roles["print(1)"] is Role.TOOL_RESULT
    assert roles["c2lnbmVk"] is Role.IMMUTABLE and roles["thinking about it"] is Role.IMMUTABLE
    assert roles["Done."] is Role.ASSISTANT_TEXT
    assert roles["iVBORw0KGgo="] is Role.ATTACHMENT and roles["print(2)"] is Role.ATTACHMENT
    tool_texts = {s.text for s in walk.segments if s.role in (Role.TOOL_CALL, Role.TOOL_RESULT)}
    assert tool_texts == {"/p/a.py", "print(1)"}  # not their ids and names
    assert walk.format == "gemini" and walk.model is None  # the API names it in the path


def test_pairs_by_id_when_both_have_one() -> None:
    body = conversation("/p")
    body["contents"] += [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"id": "c1", "name": "read_file", "args": {"file_path": "/p/a"}}},
                {"functionCall": {"id": "c2", "name": "read_file", "args": {"file_path": "/p/b"}}},
            ],
        },
        {
            "role": "user",
            "parts": [  # answered out of order: the ids decide
                {
                    "functionResponse": {
                        "id": "c2",
                        "name": "read_file",
                        "response": {"output": "B"},
                    }
                },
                {
                    "functionResponse": {
                        "id": "c1",
                        "name": "read_file",
                        "response": {"output": "A"},
                    }
                },
            ],
        },
    ]
    walk = gemini.walk(body)
    assert [(c.id, c.input["file_path"], c.result) for c in walk.calls] == [
        ("c1", "/p/a", ("contents", 3, "parts", 1)),
        ("c2", "/p/b", ("contents", 3, "parts", 0)),
    ]


def test_pairs_by_name_and_order_without_ids() -> None:
    body = conversation("/p")
    body["contents"] += [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "read_file", "args": {"file_path": "/p/a"}}},
                {"functionCall": {"name": "run_shell_command", "args": {"command": "ls"}}},
                {"functionCall": {"name": "read_file", "args": {"file_path": "/p/b"}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                # Gemini CLI gives responses ids of its own when the calls came without.
                {
                    "functionResponse": {
                        "id": "run_shell_command-9-x",
                        "name": "run_shell_command",
                        "response": {"output": "a b"},
                    }
                },
                {"functionResponse": {"name": "read_file", "response": {"output": "A"}}},
                {
                    "functionResponse": {
                        "id": "read_file-9-y",
                        "name": "read_file",
                        "response": {"output": "B"},
                    }
                },
            ],
        },
    ]
    walk = gemini.walk(body)
    assert [(c.name, c.input, c.result[-1] if c.result else None) for c in walk.calls] == [
        ("read_file", {"file_path": "/p/a"}, 1),
        ("run_shell_command", {"command": "ls"}, 0),
        ("read_file", {"file_path": "/p/b"}, 2),
    ]
    by_text = {s.text: s.call_id for s in walk.segments if s.role is Role.TOOL_RESULT}
    assert by_text["B"] == walk.calls[2].id and by_text["A"] == walk.calls[0].id


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        # A response answering no call: its content would reach the model unjudged.
        (
            [
                {
                    "role": "user",
                    "parts": [
                        {"functionResponse": {"name": "read_file", "response": {"output": "x"}}}
                    ],
                }
            ],
            "answers no tool call",
        ),
        (
            [
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "id": "zz",
                                "name": "read_file",
                                "response": {"output": "x"},
                            }
                        }
                    ],
                }
            ],
            "zz answers no",
        ),
        # A response before its call does not answer it.
        (
            [
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "id": "c9",
                                "name": "read_file",
                                "response": {"output": "x"},
                            }
                        }
                    ],
                },
                {
                    "role": "model",
                    "parts": [{"functionCall": {"id": "c9", "name": "read_file", "args": {}}}],
                },
            ],
            "answers no tool call",
        ),
        # Two answers to one call, and two calls sharing an id.
        (
            [
                *tool_turn("read_file", {}, "x", call_id="c1"),
                {
                    "role": "user",
                    "parts": [
                        {
                            "functionResponse": {
                                "id": "c1",
                                "name": "read_file",
                                "response": {"output": "y"},
                            }
                        }
                    ],
                },
            ],
            "two tool results",
        ),
        (
            [
                *tool_turn("read_file", {}, "x", call_id="c1"),
                *tool_turn("read_file", {}, "y", call_id="c1"),
            ],
            "two tool results answer c1",
        ),
        (
            [
                {
                    "role": "model",
                    "parts": [
                        {"functionCall": {"id": "c1", "name": "a", "args": {}}},
                        {"functionCall": {"id": "c1", "name": "b", "args": {}}},
                    ],
                }
            ],
            "two tool calls share an id",
        ),
        # Unreadable shapes and a field spelled two ways.
        (["not an object"], "contents[2] is not an object"),
        ([{"role": "user", "parts": "text"}], "parts[0] is not an object"),
        (
            [{"role": "user", "parts": [{"functionResponse": {}, "function_response": {}}]}],
            "spelled two ways",
        ),
    ],
)
def test_unpairable_or_unreadable_bodies_raise(extra: list[Any], message: str) -> None:
    body = conversation("/p")
    body["contents"] += extra
    with pytest.raises(ValueError, match=re.escape(message)):
        gemini.walk(body)


def test_contents_must_be_a_list() -> None:
    with pytest.raises(ValueError, match="contents is not a list"):
        gemini.walk({"contents": {"role": "user", "parts": [{"text": "hi"}]}})


def test_snake_case_fields_are_walked_and_withheld_too() -> None:
    body = {
        "contents": [
            {
                "role": "model",
                "parts": [
                    {
                        "function_call": {"name": "read_file", "args": {"file_path": "/p/.env"}},
                        "thought_signature": "c2ln",
                    }
                ],
            },
            {
                "role": "user",
                "parts": [
                    {"function_response": {"name": "read_file", "response": {"output": "KEY=1"}}}
                ],
            },
        ],
        "system_instruction": {"parts": [{"text": "sys"}]},
    }
    walk = gemini.walk(body)
    roles = {s.text: s.role for s in walk.segments}
    assert (roles["sys"], roles["KEY=1"], roles["c2ln"]) == (
        Role.SYSTEM,
        Role.TOOL_RESULT,
        Role.IMMUTABLE,
    )
    assert walk.calls[0].result is not None
    gemini.withhold_result(body, walk.calls[0].result, "[w]")
    assert body["contents"][1]["parts"][0] == {
        "function_response": {"name": "read_file", "response": {"output": "[w]"}}
    }


def test_code_assist_and_count_tokens_wrappers_are_walked_under_their_key() -> None:
    inner = conversation(
        "/p", tool_turn("read_file", {"file_path": "/p/.env"}, "K=1", call_id="c1")
    )
    walk = gemini.walk(code_assist(inner))
    assert walk.model == "gemini-2.5-pro"
    assert walk.calls[0].result == ("request", "contents", 3, "parts", 0)
    assert {s.path[0] for s in walk.segments} == {"request"}
    count = gemini.walk({"generateContentRequest": {"model": "models/gemini-2.5-flash", **inner}})
    assert count.model == "gemini-2.5-flash"
    assert count.calls[0].result == ("generateContentRequest", "contents", 3, "parts", 0)
    ca_count = gemini.walk({"request": {"model": "models/gemini-2.5-pro", **inner}})
    assert ca_count.calls[0].result == ("request", "contents", 3, "parts", 0)


def test_withhold_replaces_the_response_and_keeps_id_name_position() -> None:
    body = conversation(
        "/p",
        tool_turn(
            "read_file",
            {"file_path": "/p/.env"},
            "A=1",
            response_id="read_file-1-a",
            signature="c2ln",
            willContinue=False,
        ),
    )
    _parts(body, 3).append({"text": "and here is more"})
    before = copy.deepcopy(body)
    walk = gemini.walk(body)
    assert walk.calls[0].result is not None
    gemini.withhold_result(body, walk.calls[0].result, "[withheld]")
    assert _parts(body, 3)[0] == {
        "functionResponse": {
            "id": "read_file-1-a",
            "name": "read_file",
            "response": {"output": "[withheld]"},
            "willContinue": False,
        }
    }
    before["contents"][3]["parts"][0]["functionResponse"]["response"] = {"output": "[withheld]"}
    assert body == before  # nothing else changed, the signature included


def test_withhold_removes_media_of_a_read_file() -> None:
    png = {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}}
    # Models that take media in a function response get it nested; others as the parts
    # right after the response (Gemini CLI's convertToFunctionResponse).
    body = conversation(
        "/p",
        tool_turn(
            "read_file", {"file_path": "/p/a.png"}, "Binary content", call_id="c1", parts=[png]
        ),
        tool_turn("read_file", {"file_path": "/p/b.png"}, "Binary content", call_id="c2"),
    )
    _parts(body, 5).extend(
        [
            copy.deepcopy(png),
            {"fileData": {"fileUri": "gs://b/c.pdf"}},
            {"text": "typed by the user"},
        ]
    )
    walk = gemini.walk(body)
    roles = {s.path: s.role for s in walk.segments}
    assert roles[("contents", 5, "parts", 1, "inlineData", "data")] is Role.TOOL_RESULT
    assert roles[("contents", 5, "parts", 3, "text")] is Role.USER_TEXT
    for call in walk.calls:
        assert call.result is not None
        gemini.withhold_result(body, call.result, "[w]")
    assert _parts(body, 3) == [
        {"functionResponse": {"id": "c1", "name": "read_file", "response": {"output": "[w]"}}}
    ]
    assert _parts(body, 5)[1:] == [{"text": "[w]"}, {"text": "[w]"}, {"text": "typed by the user"}]


@pytest.mark.parametrize(
    ("path", "ok"),
    [
        ("/v1beta/models/gemini-2.5-pro:generateContent", True),
        ("/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", True),
        ("/v1/models/gemini-2.5-flash:countTokens", True),
        ("//v1beta/models/Gemini-2.5-Pro:StreamGenerateContent;x", True),
        ("/v1beta/models/gemini-2.5-pro%3AgenerateContent", True),
        ("/v1internal:streamGenerateContent?alt=sse", True),
        ("/v1internal:countTokens", True),
        (
            "/v1/projects/p/locations/us-central1/publishers/google/models/gemini-2.5-pro"
            ":streamGenerateContent",
            True,
        ),
        ("/v1beta/models/gemini-2.5-pro", False),
        ("/v1beta/models/text-embedding-004:embedContent", False),
        ("/v1internal:loadCodeAssist", False),
        ("/v1/messages", False),
    ],
)
def test_matches_generate_and_count_paths_only(path: str, ok: bool) -> None:
    assert gemini.matches(path) is ok
    if ok:
        assert detect(path) is gemini


def test_error_body_is_google_shaped() -> None:
    assert gemini.error_body("no", 403) == {
        "error": {"code": 403, "message": "no", "status": "PERMISSION_DENIED"}
    }
    assert gemini.error_body("bug", 500)["error"]["status"] == "INTERNAL"


def test_gemini_cli_session_context_states_the_working_directory() -> None:
    assert tools.working_directory([session_context("/home/u/my project")]) == (
        "/home/u/my project"
    )
    body = conversation("/work/p")
    walk = gemini.walk(body)
    assert tools.working_directory(walk.texts(Role.USER_TEXT)) == "/work/p"
