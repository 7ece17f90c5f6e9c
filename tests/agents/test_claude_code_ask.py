"""The real Claude Code CLI, parked by gate on a likely secret and answered by a person from
another terminal (`gate pending`, `gate redact`/`gate approve`), as a user would.

Skipped unless a `claude` binary is on PATH or named by GATE_TEST_CLAUDE_BIN (see
test_claude_code_cli.py). The secret is a fake GitHub token made at run time.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_clis import CASES, PROMPT, BlackHole, environment
from agent_script import Call, steps
from fake_models import FakeModels
from screen.secrets_corpus import Gen

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]

GATE = [sys.executable, "-m", "gate"]
CLAUDE = next(c for c in CASES if c.agent == "claude-code")


def _gate(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GATE, *args], env=env, capture_output=True, text=True, timeout=60, check=False
    )


def _question(env: dict[str, str], deadline: float) -> dict[str, object]:
    """The first question gate asks, read the way a person would: `gate pending --json`."""
    while time.monotonic() < deadline:
        done = _gate(env, "pending", "--json")
        if done.returncode == 0 and (pending := json.loads(done.stdout)["pending"]):
            return dict(pending[0])
        time.sleep(0.3)
    pytest.fail("gate asked no question")


@pytest.mark.parametrize("answer", ["redact", "approve"])
def test_claude_code_waits_while_a_person_answers_from_another_terminal(
    gate_dirs: dict[str, Path], answer: str
) -> None:
    binary = CLAUDE.binary()
    if binary is None:
        pytest.skip(f"no `claude` on PATH and {CLAUDE.bin_env} unset")
    project, home = gate_dirs["project"].resolve(), gate_dirs["home"]
    token = Gen(random.SystemRandom().randrange(1 << 30)).crc_token("ghp_")
    (project / "deploy.md").write_text(f"# Deploy\nexport GH_TOKEN={token}\nmake release\n")
    command = {"command": "cat deploy.md", "description": "Show deploy notes"}
    models = FakeModels(script=steps(Call("Bash", command), answer="done")).start()
    hole = BlackHole()
    try:
        env = environment(CLAUDE, home, project, hole.url)
        agent = subprocess.Popen(
            [
                *GATE,
                "run",
                "--upstream",
                f"anthropic={models.url}",
                "--",
                binary,
                *CLAUDE.argv(PROMPT),
            ],
            cwd=project,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            question = _question(env, time.monotonic() + 150)
            # What the person sees is masked: never the token.
            assert token not in json.dumps(question)
            assert question["kind"] == "send-secret"
            (finding,) = question["findings"]
            assert finding["preview"].startswith("ghp_") and token[-4:] in finding["preview"]
            assert "export GH_TOKEN=ghp_" in str(finding["context"])  # lines around, masked
            done = _gate(env, answer, str(question["id"]))
            assert done.returncode == 0, done.stderr
            _, err = agent.communicate(timeout=150)
        finally:
            if agent.poll() is None:
                agent.kill()
                agent.communicate()
    finally:
        hole.stop()
        models.stop()
    assert agent.returncode == 0, err[-2000:]
    sent = b"".join(s.body for s in models.seen)
    if answer == "redact":
        assert token.encode() not in sent  # the parked request left with it replaced
        assert b"[gate: " in sent
    else:
        assert token.encode() in sent  # the person let it go
    dataset = gate_dirs["data"] / "decisions" / "dataset" / "send-secret.jsonl"
    line = json.loads(dataset.read_text().splitlines()[0])
    assert (line["answer"], line["by"]) == (answer, "person")
    assert token not in dataset.read_text()
