"""A conversation's next turn walks and decides only what it added (gate/providers/history.py
Items, gate/screen/decided.py): the walk of the items its last turn walked is taken up, and
the working directory, actions, shell state, background tasks and decisions of the calls
its last turn decided are taken as they were, only while nothing they depend on changed.
Every verdict is the one a screening that keeps nothing gives, whatever a random session
does between turns: an edit in the prefix, a call of the prefix answered in the new items,
a background command started in the prefix whose output arrives later, a file sourced (in
a `cd`) in the prefix that a new call prints, the working directory the prompt states
changed under the prefix's relative paths, a rule file or denied file changed, a symlink
the prefix read swapped to the denied file, another conversation's body."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from gate.screen.request import Verdict
from screen.test_item_cache import PATHS, Talk
from screen.test_prefix import _gate, _history, _withholds


def _step(talk: Talk, project: Path, rand: random.Random, value: str) -> str:
    """One random change between two turns; returns what it was."""
    kind = rand.choice(
        [
            "say",
            "read",
            "open",
            "background",
            "output",
            "late_start",
            "read_output",
            "source",
            "printenv",
            "edit",
            "unknown",
            "rules",
            "env",
            "swap",
            "bound",
            "cwd",
            "relative",
            "drop",
        ]
    )
    n = talk.n
    if kind == "say":
        talk.say(f"and then {rand.random()}")
    elif kind == "read":
        talk.call("Read", {"file_path": f"{project}/src/link.txt"}, f"1\t{rand.random()}")
    elif kind == "open":  # answered by a later turn's new items
        talk.call("Bash", {"command": f"make target{n}"}, None)
    elif kind == "background":  # started now; its output comes in a later turn
        out = f"/tmp/claude/bg{n}.output"
        said = f"Command running in background with ID: bg{n}. Output is being written to: {out}"
        talk.call("Bash", {"command": "cat .env", "run_in_background": True}, said)
    elif kind == "output":  # the output of a task started in an earlier turn
        talk.call("TaskOutput", {"task_id": f"bg{rand.randrange(max(n, 1))}"}, value)
    elif kind == "late_start":  # a task an earlier output named says it started only now
        said = f"Command running in background with ID: bg{rand.randrange(max(n, 1))}."
        talk.call("Bash", {"command": "ls", "run_in_background": True}, said)
    elif kind == "read_output":
        talk.call("Read", {"file_path": f"/tmp/claude/bg{rand.randrange(max(n, 1))}.output"}, value)
    elif kind == "source":  # the shell keeps what it sourced for later calls
        talk.call("Bash", {"command": "cd src && set -a && . ../.env"}, "")
    elif kind == "printenv":
        talk.call("Bash", {"command": "printenv"}, f"PATH=/bin\n{value}")
    elif kind == "edit":
        calls = [e for e in talk.events if e["kind"] == "call" and e["result"] is not None]
        if calls:
            rand.choice(calls)["result"] = f"out {talk.gen.crc_token('ghp_')}"
    elif kind == "unknown":
        calls = [e for e in talk.events if e["kind"] == "call"]
        if calls:
            rand.choice(calls)["extra"] = {"x_note": f"seen {value}"}
    elif kind == "rules":
        rules = project / ".gate" / "rules.yaml"
        rules.write_text(rules.read_text() + f"  - Read(./gen{n}.txt)\n")
    elif kind == "env":
        (project / ".env").write_text(f"DATABASE_PASSWORD={talk.gen.password(20)}\n")
    elif kind == "swap":  # a file the prefix read is another file now
        link = project / "src" / "link.txt"
        target = "../.env" if link.resolve().name == "plain.txt" else "plain.txt"
        link.unlink()
        link.symlink_to(target)
    elif kind == "bound":
        talk.bound = not talk.bound
    elif kind == "cwd":  # the prompt states another working directory
        talk.project = project if talk.project != project else project / "src"
    elif kind == "relative":  # read from the working directory: `src` makes it the .env
        talk.call("Bash", {"command": "cat ../.env"}, value)
    elif kind == "drop" and len(talk.events) > 3:
        talk.events.pop()
    if kind != "open":  # a call of the prefix answered now, most of the time
        for e in talk.events:
            if e["kind"] == "call" and e["result"] is None and rand.random() < 0.7:
                e["result"] = f"built {n}"
    return kind


def _setup(project: Path) -> None:
    (project / "src").mkdir(exist_ok=True)
    (project / "src" / "plain.txt").write_text("nothing to see\n")
    (project / "src" / "link.txt").symlink_to("plain.txt")


@pytest.mark.parametrize("fmt", list(PATHS))
@pytest.mark.parametrize("seed", range(3))
def test_random_turns_walk_and_decide_only_what_they_add(
    gate_dirs: dict[str, Path], fmt: str, seed: int
) -> None:
    project, gate = _gate(gate_dirs)
    _setup(project)
    rand = random.Random(f"walked{fmt}{seed}")
    talk = Talk(fmt, project, rand)
    (project / ".env").write_text(f"DATABASE_PASSWORD={talk.gen.password(20)}\n")
    talk.bound = rand.random() < 0.5
    other = Talk(fmt, project, random.Random(f"other{fmt}{seed}"))  # starts the same way
    other.bound = True
    _history(talk)
    _history(other)
    kinds = []
    for turn in range(40):
        value = (project / ".env").read_text().strip()
        kinds.append(_step(talk, project, rand, value))
        got = gate.both(talk.outbound())
        assert got == gate.both(talk.outbound()), f"turn {turn} resent"
        if turn % 3 == 0:  # another conversation, side by side
            other.say(f"meanwhile {turn}")
            gate.both(other.outbound())
    # The incremental state was used, or the test proves nothing (Gemini's contents are
    # walked whole: they pair by name and order; so its calls are new objects each turn).
    if fmt != "gemini":
        assert gate.convs.walked > 400, kinds
        assert gate.convs.decided > 200, kinds


@pytest.mark.parametrize("fmt", list(PATHS))
def test_a_background_output_in_a_new_turn_is_decided_as_the_command_that_started_it(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    project, gate = _gate(gate_dirs)
    talk = Talk(fmt, project, random.Random(f"bg{fmt}"))
    talk.bound = True
    secret = talk.gen.password(20)
    (project / ".env").write_text(f"DATABASE_PASSWORD={secret}\n")
    _history(talk)
    out = "/tmp/claude/bgx.output"
    said = f"Command running in background with ID: bgx. Output is being written to: {out}"
    talk.call("Bash", {"command": "cat .env", "run_in_background": True}, said)
    gate.both(talk.outbound())
    talk.say("next")
    gate.both(talk.outbound())  # the start is in the prefix now
    taken = gate.convs.decided
    talk.call("TaskOutput", {"task_id": "bgx"}, f"DATABASE_PASSWORD={secret}")
    v = gate.both(talk.outbound())
    assert fmt == "gemini" or gate.convs.decided > taken  # the earlier calls' were taken
    assert _withholds(v, secret)
    assert isinstance(v, Verdict) and any(w.tool == "TaskOutput" for w in v.withheld)


@pytest.mark.parametrize("fmt", list(PATHS))
def test_a_file_sourced_in_the_prefix_is_read_by_a_new_calls_env_dump(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    project, gate = _gate(gate_dirs)
    (project / "src").mkdir()
    talk = Talk(fmt, project, random.Random(f"src{fmt}"))
    talk.bound = True
    secret = talk.gen.password(20)
    (project / ".env").write_text(f"DATABASE_PASSWORD={secret}\n")
    _history(talk)
    talk.call("Bash", {"command": "cd src && set -a && . ../.env"}, "")
    gate.both(talk.outbound())
    talk.say("next")
    gate.both(talk.outbound())
    talk.call("Bash", {"command": "printenv"}, f"PATH=/bin\nDATABASE_PASSWORD={secret}")
    v = gate.both(talk.outbound())
    assert _withholds(v, secret)


@pytest.mark.parametrize("fmt", list(PATHS))
def test_a_symlink_the_prefix_read_swapped_to_the_denied_file_is_decided_again(
    gate_dirs: dict[str, Path], fmt: str
) -> None:
    project, gate = _gate(gate_dirs)
    _setup(project)
    talk = Talk(fmt, project, random.Random(f"swap{fmt}"))
    talk.bound = True
    shown = "1\tnothing to see"
    talk.call("Read", {"file_path": f"{project}/src/link.txt"}, shown)
    _history(talk)
    v = gate.both(talk.outbound())
    assert isinstance(v, Verdict) and not v.withheld
    talk.say("next")
    gate.both(talk.outbound())
    taken = gate.convs.decided
    link = project / "src" / "link.txt"
    link.unlink()
    link.symlink_to("../.env")
    talk.say("one more")
    v = gate.both(talk.outbound())
    assert isinstance(v, Verdict) and any(w.tool == "Read" for w in v.withheld)
    assert gate.convs.decided == taken  # nothing taken: a file a decision looked at changed
    talk.say("and one more")
    gate.both(talk.outbound())
    assert fmt == "gemini" or gate.convs.decided > taken  # taken once the files stay
