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

import psycopg
import pytest
import yaml
from audit.serve_kit import free_port

from ask.ask_kit import AskingGate, env_turn, github_token
from fake_provider import FakeProvider
from gate.ask import memory_team
from gate.config import load
from gate.proxy.server import Listening

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
        name: str, key: Path | None, url: str = pg_url, audit: bool = True, origin: str = ORIGIN
    ) -> Machine:
        root = tmp_path / name
        m = Machine(root, None)  # type: ignore[arg-type]
        m.project.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", str(m.project)], check=True)
        subprocess.run(["git", "-C", str(m.project), "remote", "add", "origin", origin], check=True)
        (root / "config").mkdir()
        port = free_port()
        decisions: dict[str, object] = {"team_key_file": str(key)} if key else {}
        config: dict[str, object] = {
            "port": port,
            "projects": [str(m.project)],
            "upstreams": {"anthropic": provider.url},
            "ask": {"timeout_seconds": 60},
            "decisions": decisions,
        }
        if audit:
            config["audit"] = {"url": pg_url}
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
        m.gate = AskingGate(Listening("127.0.0.1", port), root / "data", provider)
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
    a = machines("alice", _key(tmp_path / "team.key"), url=closed, audit=False)
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
