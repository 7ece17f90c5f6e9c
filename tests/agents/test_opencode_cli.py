"""The real OpenCode CLI through `gate run`, with each provider gate wires it to.

Skipped unless `opencode` is on PATH or named by GATE_TEST_OPENCODE_BIN, e.g.:
    mkdir -p /tmp/agents && cd /tmp/agents && npm install opencode-ai
    GATE_TEST_OPENCODE_BIN=/tmp/agents/node_modules/.bin/opencode pytest tests/agents -q
Everything stays on 127.0.0.1 (other traffic goes to a black-hole proxy); keys and the .env
value are fakes made at run time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_clis import case
from agent_run import check

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]


@pytest.mark.parametrize("name", ["anthropic", "openai", "google"])
def test_opencode_reads_of_env_are_withheld(name: str, gate_dirs: dict[str, Path]) -> None:
    c = case("opencode", name)
    project = gate_dirs["project"]
    # The user's own project config: gate's overlay changes base URLs and nothing else.
    (project / "opencode.json").write_text(
        json.dumps(
            {
                "provider": {"anthropic": {"options": {"baseURL": "http://127.0.0.1:9/not-gate"}}},
                "permission": {"bash": "allow"},
            }
        )
    )
    out = check(c, gate_dirs)
    assert all(
        s.headers.get("user-agent", "").startswith("opencode/")
        for s in out.models.seen
        if s.body and name != "google"
    )
