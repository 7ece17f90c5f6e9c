"""A gate listens off loopback only with TLS and users: without them it refuses to start."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from team_kit import make_pki

from gate.config import Config, TlsSettings
from gate.errors import ConfigError
from gate.proxy import team
from gate.users import Users


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.3.2.1", "::1", "[::1]", "localhost", "LOCALHOST"]
)
def test_loopback_needs_nothing(host: str, tmp_path: Path) -> None:
    config = replace(Config(), host=host)
    assert not team.is_shared(config)
    team.check_listen(config, Users(tmp_path))


@pytest.mark.parametrize(
    "host",
    [
        "0.0.0.0",  # noqa: S104 (refused)
        "::",
        "192.168.1.5",
        "10.0.0.1",
        "::ffff:10.0.0.1",
        "fe80::1",
        "gate.example.com",
        "localhost.example.com",
        "127.0.0.1.nip.io",
        "",
    ],
)
def test_every_other_address_needs_tls_and_users(host: str, tmp_path: Path) -> None:
    config = replace(Config(), host=host)
    assert team.is_shared(config)
    with pytest.raises(ConfigError, match=r"needs TLS.*and client authentication") as err:
        team.check_listen(config, Users(tmp_path))
    assert err.value.where == "host" and "gate users add" in err.value.message


def _tls(tmp_path: Path) -> TlsSettings:
    cert, key = make_pki(tmp_path / "pki").issue("gate", server=True)
    return TlsSettings(str(cert), str(key))


def test_tls_alone_is_not_enough(tmp_path: Path) -> None:
    config = replace(Config(), host="0.0.0.0", tls=_tls(tmp_path))  # noqa: S104
    with pytest.raises(ConfigError, match="client authentication") as err:
        team.check_listen(config, Users(tmp_path))
    assert "TLS" not in err.value.message.split("needs", 1)[1].split(";")[0]


def test_users_alone_are_not_enough(tmp_path: Path) -> None:
    Users(tmp_path).add("alice")
    config = replace(Config(), host="0.0.0.0")  # noqa: S104
    with pytest.raises(ConfigError, match=r"needs TLS: tls\.cert"):
        team.check_listen(config, Users(tmp_path))


def test_revoked_users_do_not_count(tmp_path: Path) -> None:
    users = Users(tmp_path)
    users.add("alice")
    users.revoke("alice")
    config = replace(Config(), host="0.0.0.0", tls=_tls(tmp_path))  # noqa: S104
    with pytest.raises(ConfigError, match="at least one user"):
        team.check_listen(config, users)


def test_tls_and_a_user_let_it_start(tmp_path: Path) -> None:
    Users(tmp_path).add("alice")
    config = replace(Config(), host="0.0.0.0", tls=_tls(tmp_path))  # noqa: S104
    team.check_listen(config, Users(tmp_path))


def test_forward_mode_is_never_shared(tmp_path: Path) -> None:
    Users(tmp_path).add("alice")
    config = replace(Config(), host="0.0.0.0", forward=True)  # noqa: S104
    with pytest.raises(ConfigError, match="reverse mode"):
        team.check_listen(config, Users(tmp_path))


def test_forward_mode_takes_no_listener_certificate(tmp_path: Path) -> None:
    config = replace(Config(), tls=_tls(tmp_path), forward=True)
    with pytest.raises(ConfigError, match="forward mode"):
        team.check_listen(config, Users(tmp_path))


def test_shared_true_on_loopback_has_the_same_needs(tmp_path: Path) -> None:
    config = replace(Config(), shared=True)
    with pytest.raises(ConfigError, match=r"\(shared: true\) needs TLS") as err:
        team.check_listen(config, Users(tmp_path))
    assert err.value.where == "shared"


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])  # noqa: S104 (refused)
def test_gate_serve_on_all_interfaces_refuses_to_start(host: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gate", "serve", "--host", host, "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "needs TLS" in done.stderr and "gate users add" in done.stderr
    assert "gate listening" not in done.stdout


def test_gate_serve_names_a_bad_key(tmp_path: Path, gate_dirs: dict[str, Path]) -> None:
    """A key that is not the certificate's stops `gate serve` before it listens."""
    pki = make_pki(tmp_path / "pki")
    cert, _ = pki.issue("gate", server=True)
    _, other_key = pki.issue("other", server=True)
    Users(gate_dirs["data"]).add("alice")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gate",
            "serve",
            "--host",
            "0.0.0.0",  # noqa: S104
            "--port",
            "0",
            "--tls-cert",
            str(cert),
            "--tls-key",
            str(other_key),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "tls.key is not the key of tls.cert" in done.stderr and str(other_key) in done.stderr
    assert "gate listening" not in done.stdout
