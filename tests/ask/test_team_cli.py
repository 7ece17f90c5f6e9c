"""`gate pending`, `gate approve|block` and `gate watch` against a real shared gate on
127.0.0.1 (TLS, users): on its own machine with the data dir's token, and from elsewhere
with GATE_URL and a person's token file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from team_kit import SharedGate, make_pki, start_shared

from ask.test_team_control import ask_as, wait_for
from fake_provider import FakeProvider
from gate.config import AskConfig


@pytest.fixture
def shared(
    provider: FakeProvider, gate_dirs: dict[str, Path], tmp_path: Path
) -> Iterator[SharedGate]:
    server, gate = start_shared(
        provider,
        gate_dirs["data"],
        tmp_path / "pki",
        projects=(str(gate_dirs["project"]),),
        ask=AskConfig(timeout_seconds=60),
    )
    yield gate
    server.stop()


def gate_cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gate", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=60,
    )


def test_the_cli_answers_a_shared_gate_on_its_own_machine(
    shared: SharedGate, gate_dirs: dict[str, Path]
) -> None:
    asked = ask_as(shared, "alice", gate_dirs["project"])
    [q] = wait_for(shared, 1)
    listed = gate_cli("pending", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [p["id"] for p in json.loads(listed.stdout)["pending"]] == [q["id"]]
    assert f"{shared.base}/_gate/ui?token=" in gate_cli("pending").stdout
    frame = gate_cli("watch", "--once", "--json")
    assert frame.returncode == 0 and q["id"] in frame.stdout, frame.stderr
    done = gate_cli("approve", q["id"], "--remember", "once")
    assert done.returncode == 0 and f"{q['id']}: approve" in done.stdout, done.stderr
    assert asked.wait().error is None


def test_the_cli_answers_a_remote_shared_gate_with_a_person_token(
    shared: SharedGate, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    bob_asks = ask_as(shared, "bob", gate_dirs["project"])
    [q] = wait_for(shared, 1)
    files = {}
    for name in ("alice", "bob"):
        files[name] = tmp_path / f"{name}.token"
        files[name].write_text(shared.users[name].person_token + "\n")
        files[name].chmod(0o600)
    elsewhere = {  # another machine: no data dir of the gate's, its URL and CA instead
        "GATE_DATA_DIR": str(tmp_path / "elsewhere"),
        "GATE_URL": shared.base,
        "GATE_CA": str(shared.pki.ca_file),
    }
    alice = gate_cli("pending", "--json", **elsewhere, GATE_TOKEN_FILE=str(files["alice"]))
    assert alice.returncode == 0 and json.loads(alice.stdout)["pending"] == [], alice.stderr
    refused = gate_cli("block", q["id"], **elsewhere, GATE_TOKEN_FILE=str(files["alice"]))
    assert refused.returncode == 1 and "no pending question" in refused.stderr
    bob = gate_cli("pending", "--json", **elsewhere, GATE_TOKEN_FILE=str(files["bob"]))
    assert [p["id"] for p in json.loads(bob.stdout)["pending"]] == [q["id"]]
    # Not trusted, not TLS, no token: refused before anything is answered.
    other_ca = make_pki(tmp_path / "other-ca", "another CA")
    untrusted = gate_cli(
        "pending",
        **{**elsewhere, "GATE_CA": str(other_ca.ca_file)},
        GATE_TOKEN_FILE=str(files["bob"]),
    )
    assert untrusted.returncode == 3 and "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr
    plain = gate_cli(
        "pending",
        **{**elsewhere, "GATE_URL": shared.base.replace("https:", "http:")},
        GATE_TOKEN_FILE=str(files["bob"]),
    )
    assert plain.returncode == 1 and "https://" in plain.stderr
    assert gate_cli("pending", **elsewhere).returncode == 1
    assert bob_asks.thread.is_alive()
    done = gate_cli("block", q["id"], **elsewhere, GATE_TOKEN_FILE=str(files["bob"]))
    assert done.returncode == 0, done.stderr
    assert bob_asks.wait().error is not None


def test_the_cli_sends_no_token_to_a_gate_showing_another_certificate(
    shared: SharedGate, gate_dirs: dict[str, Path], tmp_path: Path
) -> None:
    """The registration names the gate's own certificate: a listener answering there with
    another one (even from the same CA) is refused before the token leaves."""
    [registered] = (gate_dirs["data"] / "control").glob("*.json")
    info = json.loads(registered.read_text())
    other, _ = shared.pki.issue("impostor", server=True)
    alone = gate_cli("pending", "--json")
    registered.write_text(json.dumps({**info, "tls_cert": str(other)}))
    listed = gate_cli("pending")  # the gate's certificate does not chain to this one
    assert listed.returncode == 3 and "CERTIFICATE_VERIFY_FAILED" in listed.stderr
    # A chain file (leaf, then its CA): the CA verifies the gate, the pin refuses it.
    chain = tmp_path / "impostor-chain.pem"
    chain.write_text(other.read_text() + shared.pki.ca_file.read_text())
    registered.write_text(json.dumps({**info, "tls_cert": str(chain)}))
    listed = gate_cli("pending")
    assert listed.returncode == 3 and "did not show its certificate" in listed.stderr
    assert alone.returncode == 0, alone.stderr
