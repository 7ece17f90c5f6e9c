"""Real agent CLIs run headless against the loopback fake model, keeping what they wrote.

Each run gets its own HOME and a project whose `.env` holds a fake value made at run time;
the agent reads it with its tools and writes its transcript into that HOME, which the
history tests then scan, redact and restore. A case whose binary is absent is skipped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from agent_clis import CASES, PROMPT, BlackHole, Case, environment, project_files  # noqa: E402
from agent_script import steps  # noqa: E402
from fake_models import FakeModels  # noqa: E402
from gate.agents import registry  # noqa: E402
from gate.screen.checks import base62  # noqa: E402

_B62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

# One case per agent: the first in the shared table, transcripts kept (Claude Code's case
# turns session persistence off to keep its corpus runs clean).
_KEEP = {"--no-session-persistence"}


@dataclass(frozen=True)
class Run:
    agent: str
    home: Path
    project: Path
    secret: str
    stdout: str
    bodies: tuple[bytes, ...]  # what the agent sent the fake model


def github_token() -> str:
    """A fake GitHub token with a valid checksum, made now (never committed)."""
    body = "".join(_B62[b % 62] for b in os.urandom(30))
    return f"ghp_{body}{base62(zlib.crc32(body.encode()))}"


def case_for(agent: str) -> Case:
    c = next(c for c in CASES if c.agent == agent)
    argv = c.argv
    return replace(c, argv=lambda p: [a for a in argv(p) if a not in _KEEP])


def run(
    agent: str,
    tmp: Path,
    prompt: str = PROMPT,
    edit: Callable[[list[str]], list[str]] | None = None,
    secret: str | None = None,
) -> Run | None:
    """Run `agent` once in tmp/home and tmp/project (kept between runs, so a second run can
    resume the first's session); None when its binary is not installed. `edit` changes
    the agent's arguments (a resume), `secret` reuses the first run's value."""
    c = case_for(agent)
    binary = c.binary()
    if binary is None:
        return None
    home, project = tmp / "home", tmp / "project"
    home.mkdir(parents=True, exist_ok=True)
    project.mkdir(parents=True, exist_ok=True)
    if secret is None:
        # Shaped like a real token so the detectors, not only the denied-file index, see it.
        secret = github_token()
        project_files(project, secret)
    models = FakeModels(script=steps(*c.calls(project), answer=c.answer)).start()
    hole = BlackHole()
    try:
        env = environment(c, home, project, hole.url)
        spec = registry.get(c.agent)
        env.update(spec.env(models.url))
        args = c.argv(prompt.replace("{secret}", secret))
        argv = registry.command(spec, [binary, *(edit(args) if edit else args)], models.url)
        proc = subprocess.run(
            argv,
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{agent} exited {proc.returncode}: {proc.stderr[-2000:]}")
    finally:
        hole.stop()
        models.stop()
    return Run(agent, home, project, secret, proc.stdout, tuple(s.body for s in models.seen))


if __name__ == "__main__":  # look at what one agent writes: real_runs.py AGENT DIR
    out = run(sys.argv[1], Path(sys.argv[2]))
    print(out and out.secret)
