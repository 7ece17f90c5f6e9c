"""Shell pipelines' output sent through a real gate as Bash tool results, for the tests that
check a denied file's values are withheld whatever form a command printed them in."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anthropic

from fake_provider import FakeProvider
from messages import conversation, tool_turn


def run(command: str, cwd: Path) -> str:
    """What `command` (bash) prints in `cwd`."""
    done = subprocess.run(["bash", "-c", command], cwd=cwd, capture_output=True, check=True)
    return done.stdout.decode()


def send_outputs(
    client: anthropic.Anthropic,
    provider: FakeProvider,
    project: Path,
    forms: Sequence[tuple[str, tuple[str, ...]]],
    minimum: int,
) -> tuple[list[tuple[str, str]], dict[str, Any], str]:
    """Each (command, tools it needs) whose tools are installed, run in `project`, its
    output the result of a Bash call, all in one request: the commands with their output,
    and the body the provider received (parsed and as text)."""
    ran = [(c, run(c, project)) for c, tools in forms if all(map(shutil.which, tools))]
    assert len(ran) >= minimum, "too few of the tools are installed to test the forms"
    turns = [
        tool_turn(f"toolu_{i:02}", "Bash", {"command": c}, out) for i, (c, out) in enumerate(ran)
    ]
    client.messages.create(**conversation(str(project), *turns))
    return ran, provider.seen[-1].json(), provider.seen[-1].body.decode()
