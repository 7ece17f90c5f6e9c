"""`gate run --lock` in a project with no `.gate/` and no Claude settings: the agent cannot
create what gate (or Claude Code) would read later, and nothing is left behind."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from lock.test_lock import Listener

from gate.lock import scope
from gate.lock.run import run

pytestmark = pytest.mark.timeout(120)

# Run as the agent: every way to put a rule file or a settings file where none was.
AGENT = r"""
import json, os, sys
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = "done"
    except OSError as exc:
        out[name] = f"refused: {exc.strerror}"
def write(path, text='{"permissions": {"allow": ["Bash(*)"]}}'):
    with open(path, "w") as f:
        f.write(text)
project, home = sys.argv[1], sys.argv[2]
gate = os.path.join(project, ".gate")
attempt("write .gate/rules.yaml", lambda: write(os.path.join(gate, "rules.yaml"),
                                                  "secrets:\n  high: allow\n"))
attempt("rmdir .gate", lambda: os.rmdir(gate))
attempt("rename .gate", lambda: os.rename(gate, os.path.join(project, "moved")))
os.makedirs(os.path.join(project, "made"), exist_ok=True)
write(os.path.join(project, "made", "rules.yaml"), "secrets:\n  high: allow\n")
attempt("rename a dir onto .gate", lambda: os.rename(os.path.join(project, "made"), gate))
for rel in (".claude/settings.json", ".claude/settings.local.json"):
    path = os.path.join(project, rel)
    attempt(f"write {rel}", lambda: write(path))
    attempt(f"unlink {rel}", lambda: os.unlink(path))
    attempt(f"rename onto {rel}", lambda: (write(path + ".new"), os.rename(path + ".new", path)))
user = os.path.join(home, ".claude", "settings.json")
attempt("write ~/.claude/settings.json", lambda: write(user))
attempt("rename onto ~/.claude/settings.json",
        lambda: (write(user + ".new"), os.rename(user + ".new", user)))
attempt("write ~/.claude/other", lambda: write(os.path.join(home, ".claude", "other.json")))
with open(os.path.join(project, "out.json"), "w") as f:
    json.dump(out, f)
"""


def test_a_locked_agent_cannot_create_gate_rules_or_claude_settings(
    gate_dirs: dict[str, Path],
) -> None:
    project, home = gate_dirs["project"], gate_dirs["home"]
    (project / ".git").mkdir()
    gate = Listener()
    try:
        plan = scope.plan_for(
            (sys.executable, "-c", AGENT, str(project), str(home)),
            gate.port,
            str(project),
            os.environ,
        )
        assert str(project / ".gate") in plan.readonly
        assert str(home / ".claude" / "settings.json") in plan.readonly
        old = os.getcwd()
        os.chdir(project)
        try:
            code = run(plan, os.environ, "127.0.0.1", gate.port)
        finally:
            os.chdir(old)
            scope.remove_placeholders(plan.made)
    finally:
        gate.stop()
    assert code == 0
    out = json.loads((project / "out.json").read_text())
    for name, result in out.items():
        if name != "write ~/.claude/other":  # the rest of ~/.claude stays Claude's own
            assert result.startswith("refused"), (name, result)
    assert out["write ~/.claude/other"] == "done"
    # Nothing of the lock's left on the host, and nothing the agent tried either.
    assert not (project / ".gate").exists()
    # (.claude/ keeps only the agent's own `.new` files, which could not be renamed in.)
    assert sorted(p.name for p in (project / ".claude").iterdir()) == [
        "settings.json.new",
        "settings.local.json.new",
    ]
    assert not (home / ".claude" / "settings.json").exists()
    assert (home / ".claude" / "other.json").exists()


def test_placeholders_never_shadow_what_gate_reads(gate_dirs: dict[str, Path]) -> None:
    """A repository whose settings live in an ancestor gets no `{}` nearer, which would
    hide them; a `.gate/` already there gets no placeholder; a file the person wrote into a
    placeholder meanwhile is kept."""
    top = gate_dirs["project"]
    (top / ".git").mkdir()
    (top / ".gate").mkdir()
    (top / ".claude").mkdir()
    (top / ".claude" / "settings.json").write_text('{"permissions": {"deny": ["Read(./x)"]}}')
    made = scope.make_placeholders(str(top))
    assert str(top / ".gate") not in made
    assert made == (
        str(top / ".claude" / "settings.local.json"),
        str(gate_dirs["home"] / ".claude"),
        str(gate_dirs["home"] / ".claude" / "settings.json"),
    )
    (gate_dirs["home"] / ".claude" / "settings.json").write_text('{"theme": "dark"}')
    scope.remove_placeholders(made)
    assert not (top / ".claude" / "settings.local.json").exists()
    assert (gate_dirs["home"] / ".claude" / "settings.json").read_text() == '{"theme": "dark"}'
