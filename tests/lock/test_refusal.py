"""Where namespaces are unavailable `--lock` refuses, says why and how to fix it, and never
runs the agent unlocked."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from gate.lock.plan import Plan
from gate.lock.run import LockUnavailable, explain, run

FAILING = Path(__file__).with_name("failing_launcher.py")


def test_a_failing_unshare_refuses_and_the_agent_never_runs(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    plan = Plan(argv=("sh", "-c", f"touch {marker}"), port=1, hidden=(str(tmp_path / "d"),))
    with pytest.raises(LockUnavailable) as err:
        run(plan, dict(os.environ), "127.0.0.1", 1, launcher=(sys.executable, "-P", str(FAILING)))
    text = err.value.diagnostics()
    assert "cannot build the lock (unshare: " in text and "Operation not permitted" in text
    assert "hint:" in text
    assert not marker.exists()


def _kernel(**values: str) -> dict[str, str]:
    return {k.replace("__", "."): v for k, v in values.items()}


@pytest.mark.parametrize(
    ("step", "settings", "cause", "fix"),
    [
        (
            "uid_map",
            _kernel(kernel__apparmor_restrict_unprivileged_userns="1"),
            "AppArmor restricts unprivileged user namespaces",
            "kernel.apparmor_restrict_unprivileged_userns=0",
        ),
        (
            "unshare",
            _kernel(user__max_user_namespaces="0"),
            "user namespaces are turned off",
            "user.max_user_namespaces=15000",
        ),
        (
            "unshare",
            _kernel(kernel__unprivileged_userns_clone="0"),
            "unprivileged user namespaces are turned off",
            "kernel.unprivileged_userns_clone=1",
        ),
        ("unshare", {}, "does not allow new user namespaces", "seccomp=unconfined"),
        ("mount /proc", {}, "a new /proc cannot be mounted", "systempaths=unconfined"),
        ("listen", {}, "cannot build the lock (listen: ", "docs/lock.md"),
    ],
)
def test_each_cause_names_its_fix(
    step: str, settings: dict[str, str], cause: str, fix: str
) -> None:
    reply = {"step": step, "errno": 1, "error": "Operation not permitted"}
    text = explain(reply, settings.get).diagnostics()
    assert cause in text and fix in text, text
