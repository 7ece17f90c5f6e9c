"""The real Gemini CLI through `gate run`: read_file and run_shell_command results withheld.

Skipped unless `gemini` is on PATH or named by GATE_TEST_GEMINI_BIN, e.g.:
    mkdir -p /tmp/agents && cd /tmp/agents && npm install @google/gemini-cli
    GATE_TEST_GEMINI_BIN=/tmp/agents/node_modules/.bin/gemini pytest tests/agents -q
Everything stays on 127.0.0.1 (other traffic goes to a black-hole proxy); keys and the .env
value are fakes made at run time. Gemini CLI 0.61 accepts GOOGLE_GEMINI_BASE_URL in `-p`
mode only once an auth type is selected, so the test's HOME selects "gemini-api-key".
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_clis import case
from agent_run import check

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]


def test_gemini_cli_reads_of_env_are_withheld(gate_dirs: dict[str, Path]) -> None:
    out = check(case("gemini-cli", "read-and-shell"), gate_dirs)
    assert all(":streamGenerateContent" in s.path for s in out.models.seen if s.body)
    assert all(s.headers.get("user-agent", "").lower().startswith("geminicli")
               for s in out.models.seen if s.body)
