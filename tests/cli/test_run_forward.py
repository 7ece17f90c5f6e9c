"""`gate run --forward -- CMD` and `gate env --forward`: the child's proxy and trust settings,
and a plain SDK script screened by its project's rules through the proxy."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from cli.test_run import CLIENT as RUN_CLIENT

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.agents import registry

GATE = [sys.executable, "-m", "gate"]

# The "agent" of test_run.py, with nothing but the environment: api.anthropic.com, the
# proxy and the CA bundle all come from the variables gate set (and no base URL).
CLIENT = RUN_CLIENT.replace(
    'os.environ["ANTHROPIC_BASE_URL"]', 'os.environ.get("ANTHROPIC_BASE_URL")'
)
# The child records its whole environment first, then runs the agent.
_RECORD_ENV = 'env -0 > env.bin && exec "$0" client.py "$1"'


def test_run_forward_sets_the_childs_proxy_and_trust_and_applies_project_rules(
    provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    (project / ".gate").mkdir()
    (project / ".gate" / "rules.yaml").write_text("deny:\n  - Read(./config/prod.json)\n")
    (project / "client.py").write_text(CLIENT)
    gate_dirs["config"].mkdir()
    (gate_dirs["config"] / "config.yaml").write_text("egress: {default: block}\n")
    secret = fake_secret()
    # The parent's own settings, in both cases: none may reach the child.
    parent = {
        "HTTPS_PROXY": "http://127.0.0.1:9",
        "https_proxy": "http://127.0.0.1:9",
        "no_proxy": "*",
        "SSL_CERT_FILE": "/nonexistent",
        "node_extra_ca_certs": "/x",
    }
    proc = subprocess.run(
        [
            *GATE,
            "run",
            "--forward",
            "--upstream",
            f"anthropic={provider.url}",
            "--",
            "sh",
            "-c",
            _RECORD_ENV,
            sys.executable,
            secret,
        ],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, **parent},
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["text"] == provider.reply_text and out["base_url"] is None
    env = dict(item.split("=", 1) for item in (project / "env.bin").read_text().split("\0") if item)
    data = gate_dirs["data"]
    proxy = env["HTTPS_PROXY"]
    assert re.fullmatch(r"http://run:[0-9a-f]{16}@127\.0\.0\.1:\d+", proxy), proxy
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY"):
        assert env[var] == env[var.lower()] == proxy
    assert env["NO_PROXY"] == env["no_proxy"] == registry.NO_PROXY
    assert env["NODE_EXTRA_CA_CERTS"] == str(data / "mitmproxy" / "mitmproxy-ca-cert.pem")
    for var in ("SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "CODEX_CA_CERTIFICATE"):
        assert env[var] == str(data / "ca-bundle.pem")
    assert env["NODE_USE_ENV_PROXY"] == "1"
    assert "node_extra_ca_certs" not in env
    # The run's project rule applied: the gate knew the project from the proxy URL.
    sent = provider.seen[-1].json()
    placeholder = sent["messages"][2]["content"][0]["content"]
    assert "Read(./config/prod.json)" in placeholder
    assert secret not in provider.seen[-1].body.decode()
    assert all("proxy-authorization" not in s.headers for s in provider.seen)


def test_env_forward_prints_the_same_settings(gate_dirs: dict[str, Path]) -> None:
    proc = subprocess.run(
        [*GATE, "env", "--forward", "--no-check"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    lines = proc.stdout.splitlines()
    assert "unset HTTPS_PROXY https_proxy" in lines and "unset SSL_CERT_FILE" in lines
    exports = dict(
        line.removeprefix("export ").split("=", 1) for line in lines if line.startswith("export ")
    )
    data = gate_dirs["data"]
    assert exports["HTTPS_PROXY"] == exports["https_proxy"] == "http://127.0.0.1:8787"
    assert exports["CODEX_CA_CERTIFICATE"] == str(data / "ca-bundle.pem")
    assert exports["NODE_EXTRA_CA_CERTS"] == str(data / "mitmproxy" / "mitmproxy-ca-cert.pem")
    assert set(exports) == set(registry.forward_env("p", "c", "b"))


def test_ca_export_trust_and_paths(gate_dirs: dict[str, Path]) -> None:
    def gate(*args: str) -> str:
        return subprocess.run(
            [*GATE, *args], capture_output=True, text=True, timeout=60, check=True
        ).stdout

    pem = gate("ca", "export")  # made on first use
    data = gate_dirs["data"]
    cert = data / "mitmproxy" / "mitmproxy-ca-cert.pem"
    assert pem == cert.read_text() and "PRIVATE KEY" not in pem
    assert gate("ca", "export", "--bundle", "--path").strip() == str(data / "ca-bundle.pem")
    assert gate("ca", "export") == pem  # the same CA the next time
    assert str(cert) in gate("ca", "trust")
    paths = json.loads(gate("paths", "--json"))
    assert paths["ca_cert"] == str(cert) and paths["ca_bundle"] == str(data / "ca-bundle.pem")
    key = Path(paths["ca_key"])
    assert "PRIVATE KEY" in key.read_text() and key.stat().st_mode & 0o777 == 0o600
