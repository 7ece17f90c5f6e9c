"""REVIEW FINDINGS (security review of cafe3e2): each test here FAILS on the merged code
and passes once the finding is fixed. Every secret is fake and made at run time; every
listener is on loopback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fake_provider import FakeProvider

# -- F2: a signed team answer can be replayed after it was replaced or forgotten ---------


def _team_key(path: Path) -> Path:
    path.write_bytes(os.urandom(32).hex().encode())
    path.chmod(0o600)
    return path


def test_f2_a_replaced_team_allow_cannot_be_replayed_from_the_database(
    tmp_path: Path, pg_url: str
) -> None:
    """Someone with the database's credentials but not the team key (what memory_team.py
    says cannot make gate send anything) saves a signed `approve` row, waits for the team to
    change its mind (`block`) or forget it, then writes the saved row back."""
    import psycopg

    from gate.ask import memory_team, team_key

    memory = memory_team.TeamMemory(pg_url, team_key.load(_team_key(tmp_path / "team.key")))
    try:
        fp = memory.fingerprint("0" * 64, "secret:github")
        repo = "github.com/acme/api"
        assert memory.remember(fp, "secret:github", "approve", repo=repo, question_id="q1")
        with psycopg.connect(pg_url) as conn:
            saved = conn.execute("SELECT * FROM team_answers").fetchone()
        # The team changes its mind: the value is blocked from now on.
        assert memory.remember(fp, "secret:github", "block", repo=repo, question_id="q2")
        assert memory.lookup([(fp, "secret:github")], repo)[(fp, "secret:github")].answer == "block"
        # The database user, without the key, puts the old signed row back.
        with psycopg.connect(pg_url) as conn:
            conn.execute("DELETE FROM team_answers")
            marks = ", ".join(["%s"] * len(saved))
            conn.execute(f"INSERT INTO team_answers VALUES ({marks})", saved)  # noqa: S608
        found = memory.lookup([(fp, "secret:github")], repo)
        assert found.get((fp, "secret:github")) is None or (
            found[(fp, "secret:github")].answer != "approve"
        ), "a replaced team answer came back as an approval without the team key"
    finally:
        memory.close()


# -- F6: IBM Cloud IAM keys under a dotted name (Java/Spring properties) are missed -------


@pytest.mark.parametrize(
    "line", ["ibm.cloud.iam.key={v}", "ibm.cloud.iam.api-key: {v}", "ibm.apikey={v}"]
)
def test_f6_the_rewritten_ibm_pattern_keeps_dotted_names(line: str) -> None:
    """detect-secrets' IbmCloudIamDetector (what the rule used before 2b1b18d) finds these;
    the new pattern allows only [\\w-] between `ibm` and `key`."""
    import secrets as pysecrets

    from gate.screen.secrets import Scanner

    value = pysecrets.token_urlsafe(33)[:44]
    text = line.format(v=value)
    assert any(f.rule_id == "ibm.cloud-iam-key" for f in Scanner().scan(text)), text


# -- F7: a shared gate lets anyone in through /_gate/../ ----------------------------------


@pytest.mark.parametrize(
    "path", ["/_gate/../anthropic/v1/messages", "/_gate/x/../../anthropic/v1/messages"]
)
def test_f7_a_path_through_gate_s_own_prefix_needs_a_user_token(
    provider: FakeProvider, tmp_path: Path, path: str
) -> None:
    """TeamAuth lets every path that *starts* with /_gate/ through without a user (the
    control API checks its own tokens), and the addon normalises the path only afterwards:
    `/_gate/../anthropic/...` becomes a provider route, sent with no user at all."""
    from team_kit import start_shared

    (tmp_path / "proj").mkdir()
    server, shared = start_shared(
        provider, tmp_path / "data", tmp_path / "pki", projects=(str(tmp_path / "proj"),)
    )
    try:
        status, _ = shared.raw(
            "POST",
            path,
            body={"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
            headers={"x-api-key": "sk-ant-test-x"},
        )
    finally:
        server.stop()
    assert provider.seen == [], status
    assert status == 401, _


# -- F10: the console's sign-in cookie on a shared (TLS) gate is not Secure ----------------


def test_f10_the_console_cookie_of_a_shared_gate_is_secure(
    provider: FakeProvider, tmp_path: Path
) -> None:
    """The approval page adds `Secure` on a shared gate; the console's own `?token=` sign-in
    (the data dir's admin token) does not, so a browser later sends the admin token in
    clear to http://HOST:PORT (TeamAuth refuses the request, but only after reading it)."""
    from team_kit import start_shared

    server, shared = start_shared(provider, tmp_path / "data", tmp_path / "pki")
    try:
        token = (tmp_path / "data" / "control.token").read_text().strip()
        with shared.http() as client:
            resp = client.get(f"{shared.base}/_gate/console?token={token}")
    finally:
        server.stop()
    cookie = resp.headers.get("set-cookie", "")
    assert resp.status_code == 303 and "gate_control=" in cookie, (resp.status_code, cookie)
    assert "Secure" in cookie
