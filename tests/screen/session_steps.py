"""The tool calls random sessions are made of, shared by the random-session tests of a
Claude Code conversation (test_turns) and of the four formats (test_item_cache)."""

from __future__ import annotations

from typing import Any, Protocol

from screen.secrets_corpus import Gen


class Calls(Protocol):
    n: int
    gen: Gen

    def call(self, name: str, inp: dict[str, Any], result: Any, /) -> None: ...


def common_call(s: Calls, kind: str, project: str, env_value: str) -> bool:
    """Make the call a step of this kind stands for; False when the kind is not one of
    these (the caller's own steps)."""
    if kind == "read":
        s.call("Read", {"file_path": f"{project}/src/mod{s.n}.py"}, f"1\tdef f{s.n}(): pass")
    elif kind == "env":
        s.call("Read", {"file_path": f"{project}/.env"}, f"1\t{env_value}")
    elif kind == "cat_env":
        s.call("Bash", {"command": "python -c 'print(open(\".env\").read())'"}, env_value)
    elif kind == "secret":
        s.call("Bash", {"command": "gh auth token"}, s.gen.crc_token("ghp_"))
    elif kind == "notes":
        s.call("Read", {"file_path": f"{project}/notes.txt"}, "1\tmeeting notes")
    elif kind == "open":
        s.call("Bash", {"command": "make"}, None)
    else:
        return False
    return True
