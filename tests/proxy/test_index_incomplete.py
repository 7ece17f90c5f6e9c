"""While the denied-file walk of a project has run out of budget, a search over what it did
not walk is withheld as the strictest read and says so; `gate rules --json` names what was
not walked (through a real listener, with the real anthropic SDK)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anthropic
import pytest
from click.testing import CliRunner

from fake_provider import FakeProvider
from gate.cli import cli
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate
from messages import conversation, tool_turn

HARMLESS = "all good: 3 files"
WITHHELD = "[gate: content withheld."


@pytest.fixture
def big(gate_dirs: dict[str, Path]) -> Path:
    """A project whose walk runs out of budget in `bulk/` (the background walk's too)."""
    project = gate_dirs["project"]
    (project / "README.md").write_text("hello\n")
    (project / "bulk").mkdir()
    for i in range(400):
        (project / "bulk" / f"f{i}.txt").write_text("x")
    (project / "bulk" / "deep").mkdir()
    (project / "bulk" / "deep" / ".env").write_text("NEVER_INDEXED=a1b2c3d4e5f6g7h8\n")
    gate_dirs["config"].mkdir(exist_ok=True)
    (gate_dirs["config"] / "config.yaml").write_text("screen:\n  max_files: 4\n")
    return project


@pytest.fixture
def small_gate(
    provider: FakeProvider, gate_dirs: dict[str, Path], big: Path
) -> Iterator[anthropic.Anthropic]:
    config = replace(
        Config(), port=0, ask=AskConfig(mode="never"), max_files=4, projects=(str(big),)
    ).with_upstreams({"anthropic": parse_upstream("anthropic", provider.url)})
    server = BackgroundGate(config, gate_dirs["data"])
    listening = server.start()
    try:
        with anthropic.Anthropic(
            base_url=f"{listening.base_url}/anthropic", api_key="sk-t", max_retries=0
        ) as client:
            yield client
    finally:
        server.stop()


@pytest.mark.parametrize(
    ("name", "tool_input", "withheld"),
    [
        ("Grep", {"pattern": "KEY", "output_mode": "content"}, True),  # the whole project
        ("Grep", {"pattern": "KEY", "path": "bulk/deep"}, True),
        ("Bash", {"command": "grep -r KEY ."}, True),
        ("Bash", {"command": "cat README.md"}, False),  # a file: its name decides
        ("Read", {"file_path": "README.md"}, False),
    ],
)
def test_a_search_over_files_not_indexed_yet_is_withheld_and_says_so(
    small_gate: anthropic.Anthropic,
    provider: FakeProvider,
    big: Path,
    name: str,
    tool_input: dict[str, Any],
    withheld: bool,
) -> None:
    if "file_path" in tool_input:
        tool_input = {"file_path": str(big / tool_input["file_path"])}
    if "path" in tool_input:
        tool_input = {**tool_input, "path": str(big / tool_input["path"])}
    small_gate.messages.create(
        **conversation(str(big), tool_turn("t1", name, tool_input, HARMLESS))
    )
    out = provider.seen[-1].json()["messages"][2]["content"][0]["content"]
    if not withheld:
        assert out == HARMLESS
        return
    assert out.startswith(WITHHELD)
    assert "denied-file index does not cover yet" in out and str(big / "bulk") in out


def test_gate_rules_names_what_was_not_walked(big: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(big)
    result = CliRunner().invoke(cli, ["rules", "--json"])
    out = json.loads(result.stdout)
    assert out["index_incomplete"] is True and str(big / "bulk") in out["unwalked"]
    result = CliRunner().invoke(cli, ["rules"])
    assert "Not walked: " in result.output and str(big / "bulk") in result.output
