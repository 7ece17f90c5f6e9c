"""Every real agent CLI `gate run` knows, under `gate run --lock`: each finishes its task
through the lock, the `.env` value never reaching the loopback fake provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_clis import CASES, Case
from agent_run import check

pytestmark = [pytest.mark.agent_cli, pytest.mark.timeout(300)]

# One case per agent (Codex twice: its classic tools and its code mode).
LOCKED = [c for c in CASES if c.name != "code-assist"]


@pytest.mark.parametrize("case", LOCKED, ids=[f"{c.agent}-{c.name}" for c in LOCKED])
def test_agent_cli_works_locked(case: Case, gate_dirs: dict[str, Path]) -> None:
    out = check(case, gate_dirs, lock=True)
    # Locked, nothing reached the black-hole proxy on the host: there is no way to it.
    assert out.tried_outside == [], out.tried_outside
