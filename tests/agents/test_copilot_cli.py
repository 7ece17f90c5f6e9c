"""The real GitHub Copilot CLI (own-provider mode) through `gate run`.

Skipped unless `copilot` is on PATH or named by GATE_TEST_COPILOT_BIN, e.g.:
    mkdir -p /tmp/agents && cd /tmp/agents && npm install @github/copilot
    GATE_TEST_COPILOT_BIN=/tmp/agents/node_modules/.bin/copilot pytest tests/agents -q
The user's COPILOT_PROVIDER_BASE_URL (the fake model here) becomes gate's `copilot`
upstream. COPILOT_OFFLINE keeps it off GitHub; keys and the .env value are fakes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_clis import case
from agent_run import check

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]


@pytest.mark.parametrize(
    ("name", "endpoint"),
    [("completions", "/byok/chat/completions"), ("responses", "/byok/responses")],
)
def test_copilot_reads_of_env_are_withheld(
    name: str, endpoint: str, gate_dirs: dict[str, Path]
) -> None:
    out = check(case("copilot", name), gate_dirs)
    assert "COPILOT_PROVIDER_BASE_URL is set, so /copilot forwards to" in out.proc.stderr
    assert {s.path for s in out.models.seen if s.body} == {endpoint}
