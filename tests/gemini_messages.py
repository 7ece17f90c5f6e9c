"""Builders for Gemini request bodies shaped like Gemini CLI's."""

from __future__ import annotations

from typing import Any


def session_context(cwd: str) -> str:
    """The first user turn Gemini CLI sends (packages/core/src/utils/environmentContext.ts)."""
    return (
        "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\n"
        "Today's date is Monday, June 2, 2025 (formatted according to the user's locale).\n"
        "My operating system is: linux\n"
        "The workspace's temporary directory is: /home/u/.gemini/tmp/0f3c\n"
        f"- **Workspace Directories:**\n  - {cwd}\n- **Directory Structure:**\n\n"
        f"Showing up to 200 items (files + folders).\n\n{cwd}/\n├───.env\n└───src/\n\n\n"
        "</session_context>"
    )


def tool_turn(
    name: str,
    args: dict[str, Any],
    output: Any,
    *,
    call_id: str | None = None,
    response_id: str | None = None,
    signature: str | None = None,
    **response_extra: Any,
) -> list[dict[str, Any]]:
    """A model functionCall and the user functionResponse answering it, as Gemini CLI
    records them: the call keeps whatever id the API gave (often none), the response
    carries the id Gemini CLI made up for it."""
    call: dict[str, Any] = {"name": name, "args": args}
    if call_id:
        call["id"] = call_id
    call_part: dict[str, Any] = {"functionCall": call}
    if signature:
        call_part["thoughtSignature"] = signature
    response: dict[str, Any] = {"name": name, "response": {"output": output}, **response_extra}
    if response_id or call_id:
        response = {"id": response_id or call_id, **response}
    return [
        {"role": "model", "parts": [call_part]},
        {"role": "user", "parts": [{"functionResponse": response}]},
    ]


def conversation(cwd: str, *turns: list[dict[str, Any]]) -> dict[str, Any]:
    contents: list[dict[str, Any]] = [
        {"role": "user", "parts": [{"text": session_context(cwd)}]},
        {"role": "user", "parts": [{"text": "help me with this project"}]},
    ]
    for t in turns:
        contents += t
    return {
        "contents": contents,
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "read_file",
                        "description": "Reads a file.",
                        "parametersJsonSchema": {
                            "type": "object",
                            "properties": {"file_path": {"type": "string"}},
                        },
                    }
                ]
            }
        ],
        "generationConfig": {
            "temperature": 0,
            "topP": 1,
            "thinkingConfig": {"includeThoughts": True},
        },
    }


def code_assist(body: dict[str, Any], model: str = "gemini-2.5-pro") -> dict[str, Any]:
    """The same request as Gemini CLI sends it to Code Assist (Google login)."""
    return {
        "model": model,
        "project": "fake-project-123",
        "user_prompt_id": "abc########1",
        "request": {**body, "session_id": "5e55"},
    }
