"""`gate run -- CMD` end to end, in a real subprocess, with the anthropic SDK as the agent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.proxy.server import Listening

GATE = [sys.executable, "-m", "gate"]

# The "agent": reads its base URL from the environment like any SDK user, reports it, and
# sends a conversation whose Read result is a project-specific denied file.
CLIENT = textwrap.dedent("""
    import json, os, sys
    import anthropic
    secret = sys.argv[1]
    client = anthropic.Anthropic(api_key="sk-ant-fake", max_retries=0)
    turn = [
        {"role": "user", "content": "deploy it"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Read",
            "input": {"file_path": os.path.join(os.getcwd(), "config/prod.json")}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
            "content": '{"password": "' + secret + '"}'}]},
    ]
    msg = client.messages.create(model="claude-test", max_tokens=8, messages=turn)
    advertised = os.path.exists(os.path.join(os.environ["GATE_DATA_DIR"], "server.json"))
    print(json.dumps({"base_url": os.environ["ANTHROPIC_BASE_URL"], "text": msg.content[0].text,
                      "advertised": advertised}))
    sys.exit(int(os.environ.get("EXIT_WITH", "0")))
""")


def _project(root: Path) -> Path:
    (root / ".gate").mkdir()
    (root / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./config/prod.json)\n")
    (root / "client.py").write_text(CLIENT)
    return root


def _run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*GATE, *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
        check=False,
    )


def test_gate_run_starts_a_gate_wires_the_agent_and_learns_the_project_root(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = _project(gate_dirs["project"])
    secret = fake_secret()
    proc = _run(
        [
            "run",
            "--upstream",
            f"anthropic={provider.url}",
            "--",
            sys.executable,
            "client.py",
            secret,
        ],
        project,
        EXIT_WITH="3",
    )
    assert proc.returncode == 3, proc.stderr  # the command's exit code comes back
    out = json.loads(proc.stdout)
    assert out["text"] == provider.reply_text
    assert "/_run/" in out["base_url"] and out["base_url"].endswith("/anthropic")
    # A gate started for one run is never offered to other runs (they may want other
    # upstreams, and it stops when this run ends).
    assert out["advertised"] is False
    sent = provider.seen[-1].json()
    placeholder = sent["messages"][2]["content"][0]["content"]
    # The rule lives in the project's own rule file: only a gate that knows the run's
    # project root (from the run id in the URL, not from any prompt) can apply it.
    assert "Read(./config/prod.json)" in placeholder and ".gate/rules.yaml:2" in placeholder
    assert secret not in provider.seen[-1].body.decode()
    # The gate it started is gone, and so is the run's registration.
    assert not (gate_dirs["data"] / "server.json").exists()
    assert list((gate_dirs["data"] / "runs").iterdir()) == []
    log = json.loads(_run(["log", "--json"], project).stdout)
    assert log["requests"][0]["run_id"] and log["requests"][0]["agent"] == "generic"


def test_gate_run_reuses_a_gate_already_serving_this_data_dir(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = _project(gate_dirs["project"])
    proc = _run(["run", "--", sys.executable, "client.py", fake_secret()], project)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["base_url"].startswith(f"{gate.base_url}/_run/")
    assert "Read(./config/prod.json)" in provider.seen[-1].body.decode()


def test_gate_run_reports_a_missing_command(gate_dirs: dict[str, Path]) -> None:
    proc = _run(["run", "--", "no-such-agent-xyz"], gate_dirs["project"])
    assert proc.returncode == 127
    assert "command not found: no-such-agent-xyz" in proc.stderr


def test_gate_run_rejects_an_unknown_agent(gate_dirs: dict[str, Path]) -> None:
    proc = _run(["run", "--agent", "nope", "--", "true"], gate_dirs["project"])
    assert proc.returncode == 2
    assert "unknown agent 'nope'" in proc.stderr


def test_a_malformed_project_rule_file_stops_the_run_before_the_agent(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = _project(gate_dirs["project"])
    (project / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./config/prod.json\n")
    proc = _run(
        [
            "run",
            "--upstream",
            f"anthropic={provider.url}",
            "--",
            sys.executable,
            "client.py",
            fake_secret(),
        ],
        project,
    )
    assert proc.returncode == 1
    assert ".gate/rules.yaml:2: " in proc.stderr and "not a rule" in proc.stderr
    assert proc.stdout == "" and provider.seen == []


def test_a_project_rule_file_broken_mid_run_blocks_requests(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    import httpx2 as httpx

    from messages import conversation

    project = _project(gate_dirs["project"])
    (project / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./config/prod.json\n")
    resp = httpx.post(
        f"{gate.base_url}/anthropic/v1/messages",
        json=conversation(str(project)),
        headers={"x-api-key": "k"},
    )
    assert resp.status_code == 400
    message = resp.json()["error"]["message"]
    assert ".gate/rules.yaml:2: " in message and "not a rule" in message
    assert provider.seen == []


def test_gate_run_keeps_a_base_url_the_user_already_set(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = _project(gate_dirs["project"])
    # The user routes through their own gateway: gate run must forward there, not to the
    # public API. (The fake provider stands in for the company gateway.)
    proc = _run(
        ["run", "--", sys.executable, "client.py", fake_secret()],
        project,
        ANTHROPIC_BASE_URL=provider.url,
    )
    assert proc.returncode == 0, proc.stderr
    assert f"ANTHROPIC_BASE_URL is set, so /anthropic forwards to {provider.url}" in proc.stderr
    assert "/_run/" in json.loads(proc.stdout)["base_url"]
    assert "Read(./config/prod.json)" in provider.seen[-1].body.decode()


def test_gate_run_under_a_shell_already_pointed_at_a_gate_does_not_loop(
    gate: Listening, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = _project(gate_dirs["project"])
    proc = _run(
        ["run", "--", sys.executable, "client.py", fake_secret()],
        project,
        ANTHROPIC_BASE_URL=f"{gate.base_url}/anthropic",
    )
    assert proc.returncode == 0, proc.stderr
    assert "forwards to" not in proc.stderr  # a gate URL is not taken as an upstream
    assert json.loads(proc.stdout)["base_url"].startswith(f"{gate.base_url}/_run/")
    assert provider.seen
