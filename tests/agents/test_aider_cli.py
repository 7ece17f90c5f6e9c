"""The real Aider through `gate run`: a .env named on its command line is pasted into the
prompt (Aider has no tools), and gate's denied-content screening withholds its value.

Skipped unless `aider` is on PATH or named by GATE_TEST_AIDER_BIN, e.g.:
    python3 -m venv /tmp/aider-venv && /tmp/aider-venv/bin/pip install aider-chat
    GATE_TEST_AIDER_BIN=/tmp/aider-venv/bin/aider pytest tests/agents -q
Everything stays on 127.0.0.1 (other traffic goes to a black-hole proxy); keys and the .env
value are fakes made at run time.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_clis import case
from agent_run import check

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]


def test_aider_added_env_file_is_withheld(gate_dirs: dict[str, Path]) -> None:
    out = check(case("aider", "added-file"), gate_dirs)
    sent = [s.json() for s in out.models.seen if s.body]
    pasted = [
        m["content"]
        for b in sent
        for m in b["messages"]
        if m["role"] == "user" and ".env\n```" in m["content"]
    ]
    assert pasted and all("[gate: withheld a value from .env" in p for p in pasted)
