"""Requests that state no working directory (SDK scripts, Aider, side requests): the denied
values of every project the gate knows are withheld; with no project known, they block."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import anthropic
import openai
import pytest

from conftest import closed_after_test, fake_secret
from fake_provider import FakeProvider
from gate.config import AskConfig, Config, parse_upstream
from gate.proxy.server import BackgroundGate, Listening
from messages import conversation


def _gate(provider: FakeProvider, data: Path, projects: tuple[str, ...]) -> BackgroundGate:
    config = replace(Config(), port=0, ask=AskConfig(mode="never"), projects=projects)
    return BackgroundGate(
        config.with_upstreams(
            {n: parse_upstream(n, provider.url) for n in ("anthropic", "openai")}
        ),
        data,
    )


@pytest.fixture
def bare_gate(provider: FakeProvider, gate_dirs: dict[str, Path]) -> Iterator[Listening]:
    """A gate told about no project (`gate serve` started outside any repository)."""
    server = _gate(provider, gate_dirs["data"], ())
    yield server.start()
    server.stop()


def _words() -> str:
    """A passphrase of lower-case words, as a person picks one: no entropy test finds it."""
    return (
        "-".join(
            secrets.choice(
                ["amber", "willow", "cobalt", "harbor", "lantern", "meadow", "quartz", "tundra"]
            )
            for _ in range(3)
        )
        + secrets.choice("bcdfg") * 2
    )


def _sdk(listening: Listening) -> anthropic.Anthropic:
    return closed_after_test(
        anthropic.Anthropic(
            base_url=f"{listening.base_url}/anthropic",
            max_retries=0,
            api_key="sk-ant-test-" + os.urandom(4).hex(),
        )
    )


def test_a_known_project_s_word_like_values_and_lines_are_withheld(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    phrase, line = _words(), f"the vault code is {secrets.randbelow(10**6):06d} on tuesdays"
    (project / ".env").write_text(f"PASSPHRASE={phrase}\nMODE=production\n")
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./private/**)\n")
    (project / "private").mkdir()
    (project / "private" / "notes.md").write_text(f"# notes\n{line}\n")
    # An SDK script: no system prompt, no working directory anywhere in the body.
    client.messages.create(
        model="m",
        max_tokens=8,
        messages=[
            {"role": "user", "content": f"phrase {phrase}; notes say: {line}; mode production"}
        ],
    )
    sent = provider.seen[-1].json()["messages"][0]["content"]
    assert phrase not in sent and line not in sent
    assert "withheld a value from .env" in sent and "withheld a value from notes.md" in sent
    assert "mode production" in sent  # a stop word is not a value of the file


def test_with_no_project_known_a_request_without_a_directory_is_blocked(
    bare_gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    (gate_dirs["project"] / ".env").write_text(f"TOKEN={fake_secret('tok_')}\n")
    with _sdk(bare_gate) as c, pytest.raises(anthropic.BadRequestError) as err:
        c.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert "gate serve --project DIR" in str(err.value)
    with (
        openai.OpenAI(
            base_url=f"{bare_gate.base_url}/openai/v1", api_key="sk-test", max_retries=0
        ) as o,
        pytest.raises(openai.BadRequestError),
    ):
        o.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert provider.seen == []  # nothing left


def test_a_project_seen_once_covers_later_requests_without_a_directory(
    bare_gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    secret = fake_secret("tok_")
    (project / ".env").write_text(f"TOKEN={secret}\n")
    with _sdk(bare_gate) as c:
        c.messages.create(**conversation(str(project)))  # Claude Code's main request
        # Its side request (a title, a summary) carries no environment block.
        c.messages.create(
            model="m", max_tokens=8, messages=[{"role": "user", "content": f"title for: {secret}"}]
        )
    assert secret not in provider.seen[-1].body.decode()
    assert "withheld a value from .env" in provider.seen[-1].json()["messages"][0]["content"]


def test_projects_in_config_and_the_cli(gate_dirs: dict[str, Path]) -> None:
    from click.testing import CliRunner

    from gate import config
    from gate.cli.serve import _known_projects
    from gate.errors import ConfigError

    gate_dirs["config"].mkdir()
    path = gate_dirs["config"] / "config.yaml"
    path.write_text(f"projects:\n  - {gate_dirs['project']}\n")
    assert config.load(path).projects == (str(gate_dirs["project"]),)
    path.write_text(f"projects:\n  - {gate_dirs['project']}/missing\n")
    with pytest.raises(ConfigError, match="is not a directory") as err:
        config.load(path)
    assert "projects[0]" in err.value.diagnostics()
    path.write_text("projects: here\n")
    with pytest.raises(ConfigError, match="list of directories"):
        config.load(path)
    assert _known_projects(("/a",), ("/b", "/a"))[:2] == ("/a", "/b")
    from gate.cli import cli

    result = CliRunner().invoke(cli, ["serve", "--project", str(gate_dirs["home"] / "no")])
    assert result.exit_code == 2 and "does not exist" in result.output
