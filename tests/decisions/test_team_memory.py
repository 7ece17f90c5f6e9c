"""Team answers on a real PostgreSQL: given on one gate, applied on another; forgotten for
both; a gate with another key, a forged row or an unreachable database decides nothing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from ask.ask_kit import AskingGate, env_turn, github_token
from fake_provider import FakeProvider
from gate.ask import memory_team
from gate.config import load
from gate.proxy.server import Listening
from loopback import served_port

ORIGIN = "git@github.com:acme/api.git"
# Each test starts `gate serve` twice on a shared, loaded machine.
pytestmark = pytest.mark.timeout(300)


def _key(path: Path) -> Path:
    path.write_bytes(os.urandom(32).hex().encode())
    path.chmod(0o600)
    return path


@dataclass
class Machine:
    """One developer's machine: its own dirs, install key, clone of the repository and
    `gate serve` process."""

    root: Path
    gate: AskingGate

    @property
    def project(self) -> Path:
        return self.root / "api"

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "GATE_CONFIG_DIR": str(self.root / "config"),
            "GATE_DATA_DIR": str(self.root / "data"),
        }

    def cli(self, *args: str) -> tuple[int, str]:
        done = subprocess.run(
            [sys.executable, "-m", "gate", *args],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        return done.returncode, done.stdout + done.stderr

    def log(self) -> str:
        return (self.root / "stderr").read_text()


@pytest.fixture
def machines(
    tmp_path: Path, pg_url: str, provider: FakeProvider
) -> Iterator[Callable[..., Machine]]:
    started: list[subprocess.Popen[str]] = []

    def start(
        name: str,
        key: Path | None,
        url: str = pg_url,
        audit: bool = True,
        origin: str = ORIGIN,
        lock_timeout_ms: int | None = None,
    ) -> Machine:
        root = tmp_path / name
        m = Machine(root, None)  # type: ignore[arg-type]
        m.project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(m.project)], check=True)
        subprocess.run(["git", "-C", str(m.project), "remote", "add", "origin", origin], check=True)
        (root / "config").mkdir()
        decisions: dict[str, object] = {"team_key_file": str(key)} if key else {}
        config: dict[str, object] = {
            "port": 0,  # the gate's choice: one picked beforehand may be taken meanwhile
            "projects": [str(m.project)],
            "upstreams": {"anthropic": provider.url},
            "ask": {"timeout_seconds": 60},
            "decisions": decisions,
        }
        audit_config: dict[str, object] = {"url": pg_url} if audit else {}
        if lock_timeout_ms is not None:  # how long a database may keep gate waiting
            audit_config["lock_timeout_ms"] = lock_timeout_ms
        if audit_config:
            config["audit"] = audit_config
        if url != pg_url or not audit:
            decisions["url"] = url
        (root / "config" / "config.yaml").write_text(yaml.safe_dump(config))
        with (root / "stderr").open("w") as err:
            proc = subprocess.Popen(
                [sys.executable, "-m", "gate", "serve"],
                env=m.env(),
                text=True,
                stdout=subprocess.PIPE,
                stderr=err,
            )
        started.append(proc)
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("gate listening on"), first + m.log()
        m.gate = AskingGate(Listening("127.0.0.1", served_port(first)), root / "data", provider)
        return m

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(30)
        assert proc.stdout is not None
        proc.stdout.close()


def _ask_and_answer(m: Machine, token: str, answer: str, remember: str) -> None:
    sent = m.gate.send(env_turn(m.project, token))
    [q] = m.gate.wait_pending()
    m.gate.control().answer(q["id"], answer, remember)
    sent.wait()


def _not_asked(m: Machine, token: str) -> None:
    """Sent at once: a parked request would time out here, nobody answers it."""
    sent = m.gate.send(env_turn(m.project, token)).wait(15)
    assert sent.error is None and m.gate.control().pending() == []


def _table(url: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT * FROM team_answers").fetchall()


def test_a_team_answer_given_on_one_gate_applies_on_another_and_is_forgotten_on_both(
    machines: Callable[..., Machine], tmp_path: Path, pg_url: str, provider: FakeProvider
) -> None:
    key = _key(tmp_path / "team.key")
    a, b = machines("alice", key), machines("bob", key)
    token = github_token()
    _ask_and_answer(a, token, "approve", "team")
    _not_asked(b, token)  # bob's gate was never asked: alice's answer holds for the team
    assert token in provider.seen[-1].body.decode()
    [row] = _table(pg_url)
    dump = repr(row)
    # Neither the value, nor the key, nor an install's hash of the value is in the database.
    assert token not in dump and key.read_text() not in dump
    assert "github.com/acme/api" in dump and "approve" in dump
    code, out = b.cli("decisions", "list")
    assert code == 0 and "team" in out and "github.com/acme/api" in out, out
    entry_id = str(row[0])
    code, out = b.cli("decisions", "forget", entry_id)
    assert (code, out) == (0, f"forgot {entry_id}\n")
    # Forgetting is a signed row of the next generation: the saved approval cannot win again.
    [row] = _table(pg_url)
    assert row[4] == "forgotten" and row[-1] == 2 and str(row[0]) != entry_id
    code, out = a.cli("decisions", "forget", entry_id)
    assert code == 1 and "no remembered decision" in out
    for m in (a, b):  # asked again on both
        _ask_and_answer(m, token, "redact", "once")
    assert token not in provider.seen[-1].body.decode()


def test_a_gate_with_another_key_neither_matches_nor_forgets(
    machines: Callable[..., Machine], tmp_path: Path, pg_url: str
) -> None:
    a = machines("alice", _key(tmp_path / "team.key"))
    token = github_token()
    _ask_and_answer(a, token, "approve", "team")
    mallory = machines("mallory", _key(tmp_path / "other.key"))
    _ask_and_answer(mallory, token, "redact", "once")  # its fingerprints differ: asked
    [row] = _table(pg_url)
    code, out = mallory.cli("decisions", "forget", str(row[0]))
    assert code == 1 and "no remembered decision" in out
    code, out = mallory.cli("decisions", "list", "--json")
    assert code == 0 and str(row[0]) not in out
    assert len(_table(pg_url)) == 1


def test_a_row_changed_without_the_key_and_another_repository_match_nothing(
    machines: Callable[..., Machine], tmp_path: Path, pg_url: str
) -> None:
    key = _key(tmp_path / "team.key")
    a = machines("alice", key)
    web = machines("carol", key, origin="https://carol@github.com/acme/web.git")
    token = github_token()
    _ask_and_answer(a, token, "redact", "team")
    _ask_and_answer(web, token, "redact", "once")  # acme/web: alice answered for acme/api
    # Someone with the database's credentials but not the key turns the answer into an
    # approval for both repositories: the signature no longer verifies, nothing applies.
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            "INSERT INTO team_answers SELECT 'tforged', key_id, fingerprint, kind, answer,"
            " 'github.com/acme/web', created, expires, question_id, gate, signature"
            " FROM team_answers"
        )
        conn.execute("UPDATE team_answers SET answer = 'approve'")
    for m in (a, web):
        _ask_and_answer(m, token, "redact", "once")
    assert "has a bad signature; ignored" in a.log()
    assert token not in repr(_table(pg_url))


def test_an_unreachable_team_database_means_asking(
    machines: Callable[..., Machine], tmp_path: Path
) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = f"postgresql://gate@127.0.0.1:{s.getsockname()[1]}/gate"
    # It waits lock_timeout_ms for a connection before giving up on each lookup and store
    # (5 s by default, three times here): the same path, shorter.
    a = machines(
        "alice", _key(tmp_path / "team.key"), url=closed, audit=False, lock_timeout_ms=1000
    )
    token = github_token()
    _ask_and_answer(a, token, "approve", "team")  # not stored: the log says why
    _ask_and_answer(a, token, "redact", "once")  # so asked again
    assert "team decision memory unusable, asking instead" in a.log()
    assert "not remembered for the team" in a.log() and "cannot be used" in a.log()


def test_without_a_team_key_a_team_answer_is_not_remembered(
    machines: Callable[..., Machine], pg_url: str
) -> None:
    a = machines("alice", None)
    token = github_token()
    _ask_and_answer(a, token, "approve", "team")
    _ask_and_answer(a, token, "redact", "once")
    assert "no team key (decisions.team_key_file)" in a.log()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('team_answers')").fetchone() == (None,)


def test_the_team_key_file_is_checked(tmp_path: Path) -> None:
    from gate.ask import team_key
    from gate.errors import ConfigError

    good = _key(tmp_path / "team.key")
    assert team_key.load(good).id == team_key.load(good).id
    assert team_key.load(good).value != team_key.load(_key(tmp_path / "b.key")).value
    good.chmod(0o640)
    with pytest.raises(ConfigError, match="readable by others") as err:
        team_key.load(good)
    assert str(good) in err.value.diagnostics() and "chmod 600" in err.value.diagnostics()
    short = tmp_path / "short.key"
    short.write_bytes(b"x" * 8)
    short.chmod(0o600)
    with pytest.raises(ConfigError, match="at least 32"):
        team_key.load(short)
    link = tmp_path / "link.key"
    link.symlink_to(_key(tmp_path / "c.key"))
    with pytest.raises(ConfigError, match="cannot open"):
        team_key.load(link)
    with pytest.raises(ConfigError, match="does not exist"):
        team_key.load(tmp_path / "missing.key")


def test_config_names_the_team_database_and_refuses_what_an_agent_could_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gate.errors import ConfigError

    monkeypatch.delenv("GATE_AUDIT_URL", raising=False)
    key = _key(tmp_path / "team.key")
    path = tmp_path / "config.yaml"
    path.write_text("decisions: {team_key_file: team.key}\n")
    config = load(path)
    assert config.decisions.team_key_file == key  # relative: to config.yaml's dir
    with pytest.raises(ConfigError, match="need a PostgreSQL database"):
        memory_team.from_config(config)
    path.write_text("decisions: {team_key_file: team.key, url: 'sqlite:///x'}\n")
    with pytest.raises(ConfigError, match="PostgreSQL URL") as err:
        load(path)
    assert err.value.where == f"{path}:1: decisions.url"  # its line, as every config error
    path.write_text(
        "decisions: {team_key_file: team.key, url: 'postgresql://db.internal/g'}\n"
        "egress: {allow: [db.internal]}\n"
    )
    with pytest.raises(ConfigError, match=r"egress\.allow"):
        memory_team.from_config(load(path))


def test_a_lock_refuses_to_start_where_the_agent_could_read_the_team_key(
    tmp_path: Path, gate_dirs: dict[str, Path]
) -> None:
    from gate.errors import GateError
    from gate.lock.scope import plan_for

    outside = _key(gate_dirs["home"] / "team.key")
    with pytest.raises(GateError, match="team key") as err:
        plan_for(["claude"], 8787, str(gate_dirs["project"]), {}, (outside,))
    assert str(gate_dirs["config"]) in err.value.diagnostics()
    gate_dirs["config"].mkdir(mode=0o700, exist_ok=True)
    inside = _key(gate_dirs["config"] / "team.key")
    plan = plan_for(["claude"], 8787, str(gate_dirs["project"]), {}, (inside,))
    assert any(str(inside).startswith(d) for d in plan.hidden)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("git@github.com:acme/api.git", "github.com/acme/api"),
        ("https://me:pw@GitHub.com/acme/api.git/", "github.com/acme/api"),
        ("ssh://git@github.com:22/acme/api", "github.com/acme/api"),
        ("/srv/git/api.git", None),
        ("", None),
    ],
)
def test_a_repository_is_named_alike_from_every_clone(url: str, expected: str | None) -> None:
    assert memory_team.normalised_remote(url) == expected


# -- replay and rollback by someone with the database's credentials but not the key -------

REPO = "github.com/acme/api"
KIND = "github-token"


@pytest.fixture
def team(tmp_path: Path, pg_url: str) -> Iterator[Callable[..., memory_team.TeamMemory]]:
    from gate.ask import team_key
    from gate.ask.team_marks import TeamMarks

    opened: list[memory_team.TeamMemory] = []
    default_key = _key(tmp_path / "team.key")

    def open_gate(marks: Path | None = None, key: Path | None = None) -> memory_team.TeamMemory:
        m = memory_team.TeamMemory(
            pg_url,
            team_key.load(key or default_key),
            marks=TeamMarks(marks) if marks else None,
        )
        opened.append(m)
        return m

    yield open_gate
    for m in opened:
        m.close()


@pytest.fixture
def logged() -> Iterator[list[str]]:
    """gate's log messages while the test runs."""
    from loguru import logger

    lines: list[str] = []
    sink = logger.add(lambda m: lines.append(str(m)), level="DEBUG", format="{message}")
    yield lines
    logger.remove(sink)


def _answer(m: memory_team.TeamMemory, fp: str, repo: str = REPO) -> str | None:
    hit = m.lookup([(fp, KIND)], repo).get((fp, KIND))
    return hit.answer if hit else None


def _saved(url: str) -> list[tuple[object, ...]]:
    with psycopg.connect(url) as conn:
        return conn.execute("SELECT * FROM team_answers").fetchall()


def _put_back(url: str, rows: list[tuple[object, ...]], delete: bool = True) -> None:
    with psycopg.connect(url) as conn:
        if delete:
            conn.execute("DELETE FROM team_answers")
        for row in rows:
            marks = ", ".join(["%s"] * len(row))
            conn.execute(f"INSERT INTO team_answers VALUES ({marks})", row)  # noqa: S608


@pytest.mark.parametrize("then", ["block", "forget"])
def test_a_saved_team_approval_put_back_after_a_replace_or_forget_is_refused(
    team: Callable[..., memory_team.TeamMemory],
    tmp_path: Path,
    pg_url: str,
    then: str,
    logged: list[str],
) -> None:
    """Review F2: the database user saves the signed approve row and writes it back once
    the team changed its mind; the newest generation this gate saw wins."""
    a = team(tmp_path / "a-marks.json")
    fp = a.fingerprint("0" * 64, KIND)
    approved = a.remember(fp, KIND, "approve", repo=REPO, question_id="q1")
    assert approved is not None and _answer(a, fp) == "approve"
    saved = _saved(pg_url)
    if then == "block":
        assert a.remember(fp, KIND, "block", repo=REPO, question_id="q2")
        assert _answer(a, fp) == "block"
    else:
        assert a.forget(approved.id) and _answer(a, fp) is None
    newer = _saved(pg_url)
    assert len(newer) == 1 and newer[0][-1] == 2  # the superseded row is gone
    # Put back beside the newer row: the newer generation still decides, for every gate.
    _put_back(pg_url, saved, delete=False)
    fresh = team(tmp_path / "b-marks.json")
    assert _answer(a, fp) == _answer(fresh, fp) == ("block" if then == "block" else None)
    # Put back in place of it: refused where the newer one was seen, after a restart too.
    _put_back(pg_url, saved)
    assert _answer(a, fp) is None
    assert _answer(team(tmp_path / "a-marks.json"), fp) is None
    assert "older than the 2 this gate saw" in "".join(logged)
    # A new answer is numbered above what this gate saw, so the saved row never wins it back.
    assert a.remember(fp, KIND, "redact", repo=REPO, question_id="q3")
    assert [r[-1] for r in _saved(pg_url)] == [3]
    _put_back(pg_url, saved, delete=False)
    assert _answer(a, fp) == _answer(team(), fp) == "redact"


def test_deleting_the_newer_row_is_noticed_only_where_it_was_seen(
    team: Callable[..., memory_team.TeamMemory], tmp_path: Path, pg_url: str
) -> None:
    """The limit: the newest row deleted and the older approval put back rolls back a gate
    that never saw the newer one (nothing it holds says one existed)."""
    a = team(tmp_path / "a-marks.json")
    fp = a.fingerprint("1" * 64, KIND)
    assert a.remember(fp, KIND, "approve", repo=REPO, question_id="q1")
    saved = _saved(pg_url)
    assert a.remember(fp, KIND, "block", repo=REPO, question_id="q2")
    saw_block = team(tmp_path / "b-marks.json")
    assert _answer(saw_block, fp) == "block"
    _put_back(pg_url, saved)  # the block row deleted, the approval back
    assert _answer(a, fp) is None and _answer(saw_block, fp) is None
    assert _answer(team(tmp_path / "never-marks.json"), fp) == "approve"  # documented limit


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("answer", "'approve'"),
        ("repo", "'github.com/acme/web'"),
        ("fingerprint", "md5(fingerprint) || md5(fingerprint)"),
        ("kind", "'tool-result'"),
        ("generation", "generation + 5"),
        ("expires", "expires + 86400 * 365"),
        ("created", "created + 1"),
        ("question_id", "'q9'"),
    ],
)
def test_a_row_with_any_field_changed_matches_nothing(
    team: Callable[..., memory_team.TeamMemory],
    pg_url: str,
    column: str,
    value: str,
    logged: list[str],
) -> None:
    a = team()
    fp = a.fingerprint("2" * 64, KIND)
    assert a.remember(fp, KIND, "redact", repo=REPO, question_id="q1")
    with psycopg.connect(pg_url) as conn:
        conn.execute(f"UPDATE team_answers SET {column} = {value}")  # noqa: S608
        if column == "generation":  # also: an old row renumbered above a newer one
            conn.execute("UPDATE team_answers SET answer = 'approve'")
    [row] = _saved(pg_url)  # looked up where the changed row now says it applies
    b = team()
    assert b.lookup([(str(row[2]), str(row[3]))], str(row[5])) == {} and b.entries() == []
    assert "has a bad signature; ignored" in "".join(logged)


def test_a_row_signed_under_another_team_key_is_never_applied(
    team: Callable[..., memory_team.TeamMemory],
    tmp_path: Path,
    pg_url: str,
    logged: list[str],
) -> None:
    ours = team()
    other = team(key=_key(tmp_path / "other.key"))
    fp = ours.fingerprint("3" * 64, KIND)
    # The other key's gate writes an approval under our fingerprint (as if it knew it)...
    assert other.remember(fp, KIND, "approve", repo=REPO, question_id="q1")
    assert _answer(ours, fp) is None and ours.entries() == []  # another key_id: not ours
    assert not ours.forget(str(_saved(pg_url)[0][0]))
    # ...and the database user relabels it as ours: its signature is the other key's.
    with psycopg.connect(pg_url) as conn:
        conn.execute("UPDATE team_answers SET key_id = %s", (ours.key.id,))
    assert _answer(ours, fp) is None
    assert "has a bad signature; ignored" in "".join(logged)


def test_a_newer_team_schema_is_refused_and_the_question_asked(
    team: Callable[..., memory_team.TeamMemory], pg_url: str, logged: list[str]
) -> None:
    a = team()
    fp = a.fingerprint("4" * 64, KIND)
    assert a.remember(fp, KIND, "approve", repo=REPO, question_id="q1")
    with psycopg.connect(pg_url) as conn:
        conn.execute(
            "INSERT INTO team_answers_schema VALUES (%s)", (len(memory_team.MIGRATIONS) + 1,)
        )
    b = team()
    assert _answer(b, fp) is None
    assert b.remember(fp, KIND, "approve", repo=REPO, question_id="q2") is None
    assert "newer than this gate reads" in "".join(logged)


def test_answers_signed_before_generations_are_dropped_by_the_migration(
    team: Callable[..., memory_team.TeamMemory], pg_url: str
) -> None:
    with psycopg.connect(pg_url) as conn:  # a database a gate of the first schema wrote
        conn.execute("CREATE TABLE team_answers_schema (version INTEGER NOT NULL)")
        conn.execute(memory_team.MIGRATIONS[0])
        conn.execute("INSERT INTO team_answers_schema VALUES (1)")
        conn.execute(
            "INSERT INTO team_answers VALUES ('told', 'k', 'f', 'k', 'approve', 'r', 0, 9e9,"
            " 'q', 'g', 's')"
        )
    a = team()
    fp = a.fingerprint("5" * 64, KIND)
    assert a.remember(fp, KIND, "block", repo=REPO, question_id="q1")
    assert _answer(a, fp) == "block"
    assert [r[0] for r in _saved(pg_url)] != ["told"] and len(_saved(pg_url)) == 1
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT MAX(version) FROM team_answers_schema").fetchone() == (2,)


def test_the_marks_file_is_private_and_merges_two_processes_marks(tmp_path: Path) -> None:
    from gate.ask.team_marks import TeamMarks

    path = tmp_path / "decisions" / "team-marks.json"
    one, two = TeamMarks(path), TeamMarks(path)
    one.raise_to({("k", "f1", KIND, REPO): 3})
    two.raise_to({("k", "f2", KIND, REPO): 5})  # merges one's, never lowers it
    one.raise_to({("k", "f1", KIND, REPO): 2})
    again = TeamMarks(path)
    assert again.get(("k", "f1", KIND, REPO)) == 3 and again.get(("k", "f2", KIND, REPO)) == 5
    assert path.stat().st_mode & 0o777 == 0o600
    path.write_text("{not json")
    assert TeamMarks(path).get(("k", "f1", KIND, REPO)) == 0  # unreadable: as a new gate


def test_the_page_offers_a_team_approval_where_a_team_key_is_set(
    machines: Callable[..., Machine], tmp_path: Path, browser: Any, provider: FakeProvider
) -> None:
    key = _key(tmp_path / "team.key")
    a, b, solo = machines("alice", key), machines("bob", key), machines("solo", None)
    token = github_token()
    sent = a.gate.send(env_turn(a.project, token))
    [q] = a.gate.wait_pending()
    page = browser.new_page()
    try:
        page.goto(a.gate.control().page_url)
        card = page.locator(f"#{q['id']}")
        button = card.get_by_role("button", name="Approve for the team")
        assert "every gate of the team" in button.inner_text()
        button.click()
        card.wait_for(state="detached", timeout=15000)
        assert page.inner_text("#note") == f"{q['id']}: approve, for the team, in this repository"
        assert sent.wait().error is None
        _not_asked(b, token)  # another gate of the team: not asked
        # A gate without the team key has no such button.
        other = solo.gate.send(env_turn(solo.project, github_token()))
        [q2] = solo.gate.wait_pending()
        page.goto(solo.gate.control().page_url)
        card = page.locator(f"#{q2['id']}")
        assert card.get_by_role("button", name="Approve this request only").count() == 1
        assert card.get_by_role("button", name="Approve for the team").count() == 0
        solo.gate.control().answer(q2["id"], "block")
        other.wait()
    finally:
        page.close()
