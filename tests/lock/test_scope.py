"""What a lock covers: gate's dirs hidden, rule files read-only, the CA certificate shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from gate.errors import GateError
from gate.lock.scope import plan_for

CERT = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
KEY = "-----BEGIN " + "PRIVATE KEY-----\nMIIE\n-----END " + "PRIVATE KEY-----\n"


def test_the_plan_hides_gate_dirs_and_protects_rule_files(gate_dirs: dict[str, Path]) -> None:
    project = gate_dirs["project"]
    (project / ".git").mkdir()
    (project / ".gate").mkdir()
    (project / ".claude").mkdir()
    (project / ".claude" / "settings.local.json").write_text("{}")
    plan = plan_for(["claude"], 8787, str(project), {})
    assert set(plan.hidden) == {str(gate_dirs["data"]), str(gate_dirs["config"])}
    assert str(project / ".gate") in plan.readonly
    assert str(project / ".claude" / "settings.local.json") in plan.readonly
    assert str(project) in plan.keep and str(gate_dirs["home"]) in plan.keep
    # The config dir exists now, so the agent cannot create the user's rules file in it.
    assert gate_dirs["config"].is_dir()
    # A policy dir that does not exist is not protected by making the project read-only.
    assert not any(str(project).startswith(p) for p in plan.readonly)


def test_the_ca_certificate_is_shown_and_a_key_never(gate_dirs: dict[str, Path]) -> None:
    data = gate_dirs["data"]
    data.mkdir()
    (data / "ca.pem").write_text(CERT)
    (data / "ca-key.pem").write_text(KEY)
    env = {"NODE_EXTRA_CA_CERTS": str(data / "ca.pem"), "PATH": "/usr/bin"}
    plan = plan_for(["claude"], 8787, str(gate_dirs["project"]), env)
    assert plan.shown == (str(data / "ca.pem"),)
    with pytest.raises(GateError, match="private key"):
        plan_for(
            ["claude"],
            8787,
            str(gate_dirs["project"]),
            {**env, "SSL_CERT_FILE": str(data / "ca-key.pem")},
        )


def test_a_project_inside_gate_dirs_is_refused(gate_dirs: dict[str, Path]) -> None:
    inside = gate_dirs["data"] / "work"
    inside.mkdir(parents=True)
    with pytest.raises(GateError, match="which a lock hides"):
        plan_for(["claude"], 8787, str(inside), {})
