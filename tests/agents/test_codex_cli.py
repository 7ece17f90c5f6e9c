"""The real Codex CLI through `gate run`: what its shell reads of .env return never leaves.

Skipped unless `codex` is on PATH or named by GATE_TEST_CODEX_BIN, e.g.:
    mkdir -p /tmp/agents && cd /tmp/agents && npm install @openai/codex
    GATE_TEST_CODEX_BIN=/tmp/agents/node_modules/.bin/codex pytest tests/agents -q
Everything stays on 127.0.0.1 (other traffic goes to a black-hole proxy); keys and the .env
value are fakes made at run time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_clis import case
from agent_run import check

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]


@pytest.mark.parametrize("name", ["exec-command", "code-mode"])
def test_codex_reads_of_env_are_withheld(name: str, gate_dirs: dict[str, Path]) -> None:
    out = check(case("codex", name), gate_dirs)
    # gate's provider keeps Codex on HTTP: no WebSocket upgrade, plain JSON bodies.
    assert all(s.method == "POST" for s in out.models.seen), [s.path for s in out.models.seen]
    assert all("content-encoding" not in s.headers for s in out.models.seen)
    assert all(s.path == "/v1/responses" for s in out.models.seen)
