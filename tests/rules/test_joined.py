"""A request that only states its directory is decided by that directory's rules and every
known project's: the strictest decision of them all, never a looser one."""

from __future__ import annotations

from pathlib import Path

from gate.agents import shell
from gate.agents.actions import Action, Verb
from gate.rules.engine import Policy
from gate.rules.joined import join
from gate.rules.layers import PolicyStore
from gate.rules.loader import load_text
from gate.rules.model import Effect


def _policy(text: str) -> Policy:
    return Policy(rules=tuple(load_text(text, "t.yaml")))


def _exec(command: str, cwd: str) -> Action:
    return Action(verb=Verb.EXEC, tool="Bash", target=command, reads=shell.reads(command, cwd))


def test_the_strictest_part_decides_and_a_tie_goes_to_the_first(tmp_path: Path) -> None:
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    stated = _policy("allow:\n  - Read(./x)\nask:\n  - Read(./y)\n")
    project = _policy("deny:\n  - Read(./x)\nask:\n  - Read(./y)\n")
    joined = join([(stated, b), (project, a)])
    assert (
        joined.decide(Action(verb=Verb.READ, tool="Read", target=f"{a}/x"), b).effect is Effect.DENY
    )
    ask = joined.decide(Action(verb=Verb.READ, tool="Read", target=f"{b}/y"), b)
    assert ask.effect is Effect.ASK and ask.path == f"{b}/y"
    assert joined.decide(Action(verb=Verb.READ, tool="Read", target=f"{b}/z"), b).effect is None


def test_a_relative_command_is_also_decided_as_run_in_each_project(tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    (a / "private").mkdir(parents=True)
    (a / "private" / "k").write_text("x")
    b.mkdir()
    project = _policy("deny:\n  - Read(./private/**)\n")
    joined = join([(_policy(""), str(b)), (project, str(a))])
    for command in ("cat private/k", "cd private && cat k", "base32 ./private/k"):
        decision = joined.decide(_exec(command, str(b)), str(b))
        assert decision.effect is Effect.DENY, command
    # Only paths that exist there: a name the project does not hold is not its file.
    assert joined.decide(_exec("cat private/other", str(b)), str(b)).effect is None


def test_a_project_s_stricter_secrets_setting_joins(tmp_path: Path) -> None:
    (tmp_path / "a" / ".gate").mkdir(parents=True)
    (tmp_path / "a" / ".gate" / "rules.yaml").write_text("secrets:\n  high: block\n")
    (tmp_path / "b").mkdir()
    store = PolicyStore()
    alone = store.policy_for(str(tmp_path / "b"))
    joined = store.stated(str(tmp_path / "b"), (str(tmp_path / "a"),))
    assert alone.secret_action("github", "github.token", "high") == "ask"
    assert joined.secret_action("github", "github.token", "high") == "block"
    # The same parts give the same object (the next turn's path compares by identity), and
    # a stated directory that is the only project is its own policy.
    assert store.stated(str(tmp_path / "b"), (str(tmp_path / "a"),)) is joined
    assert store.stated(str(tmp_path / "b"), (str(tmp_path / "b"),)) is alone
