"""docker/ as far as this machine can check it without a docker engine: the compose file
parses and names only files that exist, the Dockerfile copies only what exists, and the
image's entrypoint and health check, run outside docker, serve and audit to PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import psycopg
import yaml
from audit import serve_kit

from fake_provider import FakeProvider
from gate.config import load as load_config
from gate.rules.loader import load_file

DOCKER = Path(__file__).resolve().parent.parent / "docker"
ROOT = DOCKER.parent


def _compose() -> dict:  # type: ignore[type-arg]
    data = yaml.safe_load((DOCKER / "compose.yaml").read_text())
    assert isinstance(data, dict)
    return data


def test_compose_parses_and_names_only_files_that_exist() -> None:
    compose = _compose()
    services = compose["services"]
    assert {"gate", "postgres"} <= services.keys()
    build = services["gate"]["build"]
    assert (DOCKER / build["context"] / build["dockerfile"]).is_file()
    named_volumes = set(compose.get("volumes") or {})
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("."):
                assert (DOCKER / source).exists(), f"{name}: {source}"
            else:
                assert source in named_volumes, f"{name}: {source}"
        for secret in service.get("secrets", []):
            assert (secret if isinstance(secret, str) else secret["source"]) in compose["secrets"]
        for dep in service.get("depends_on", []):
            assert dep in services
    # Secrets are made by the user (never committed): the README says how, git ignores them.
    howto = (DOCKER / "secrets" / "README.md").read_text()
    for secret in compose["secrets"].values():
        path = Path(secret["file"])
        assert path.parts[:2] == (".", "secrets") or path.parts[0] == "secrets"
        assert f"docker/secrets/{path.name}" in howto
    ignored = subprocess.run(["git", "check-ignore", "-q", "docker/secrets/pgpass"], cwd=ROOT)
    assert ignored.returncode == 0
    # The URL carries no password: libpq reads it from PGPASSFILE.
    env = services["gate"]["environment"]
    assert ":" not in env["GATE_AUDIT_URL"].split("@")[0].removeprefix("postgresql://")


def test_dockerfile_copies_only_what_exists_and_runs_as_a_user() -> None:
    text = (DOCKER / "Dockerfile").read_text()
    for line in re.findall(r"^COPY (?!--from)(.+)$", text, re.M):
        *sources, _dest = line.split()
        for source in sources:
            assert (ROOT / source).exists(), source
    assert re.search(r"^USER gate$", text, re.M)
    assert "HEALTHCHECK" in text and 'VOLUME ["/data"]' in text
    entry = json.loads(re.search(r"^ENTRYPOINT (.+)$", text, re.M)[1])  # type: ignore[index]
    assert Path(entry[0]).name == "entrypoint.sh"


def test_the_shipped_config_and_team_rules_load(tmp_path: Path) -> None:
    config = load_config(DOCKER / "config.yaml")
    assert config.ask.mode == "never"
    rules = load_file(DOCKER / "team-rules" / "rules.yaml")
    assert "Read(./secrets/**)" in {r.text for r in rules}


def test_the_entrypoint_serves_and_audits_to_postgres_outside_docker(
    pg_url: str, provider: FakeProvider, tmp_path: Path
) -> None:
    """The image's command and health check, run here as the container runs them."""
    config = tmp_path / "config"
    config.mkdir()
    shutil.copy(DOCKER / "config.yaml", config / "config.yaml")
    port = serve_kit.free_port()
    env = {
        **os.environ,
        "GATE_DATA_DIR": str(tmp_path / "data"),
        "GATE_CONFIG_DIR": str(config),
        "GATE_MANAGED_RULES": str(DOCKER / "team-rules" / "rules.yaml"),
        "GATE_AUDIT_URL": pg_url,
        "GATE_PORT": str(port),
        "GATE_SERVE_ARGS": f"--upstream anthropic={provider.url}",
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    health = [sys.executable, str(DOCKER / "healthcheck.py")]
    assert subprocess.run(health, env=env, capture_output=True).returncode == 1  # not yet
    proc = subprocess.Popen(
        [str(DOCKER / "entrypoint.sh")],
        env=env,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(health, env=env, capture_output=True).returncode != 0:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()  # type: ignore[union-attr]
            time.sleep(0.2)
        body = b'{"model":"m","max_tokens":8,"messages":[{"role":"user","content":"hi"}]}'
        reply = serve_kit.post(f"http://127.0.0.1:{port}", body)
        assert reply.status_code == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=60)
    assert provider.seen[-1].body == body
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM requests").fetchone() == (1,)
    assert not (tmp_path / "data" / "audit.db").exists()
