"""docker/ as far as this machine can check it without a docker engine: the compose file
parses and names only files that exist, the Dockerfile copies only what exists, and the
image's entrypoint and health check, run outside docker, serve and audit to PostgreSQL."""

from __future__ import annotations

import json
import os
import re
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
    # The container's config, its team key where compose.yaml mounts it made here.
    secrets = tmp_path / "secrets"
    subprocess.run(["sh", str(DOCKER / "make-secrets.sh"), str(secrets)], check=True)
    shipped = (DOCKER / "config.yaml").read_text()
    assert "team_key_file: /run/secrets/team_key" in shipped
    (config / "config.yaml").write_text(
        shipped.replace("/run/secrets/team_key", str(secrets / "team_key"))
    )
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
    # Team answers are on: the key the container is given is read, and their table is made
    # in the shared database.
    listed = subprocess.run(
        [sys.executable, "-m", "gate", "decisions", "list"], env=env, capture_output=True, text=True
    )
    assert listed.returncode == 0, listed.stderr
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT COUNT(*) FROM requests").fetchone() == (1,)
        assert conn.execute("SELECT to_regclass('team_answers') IS NOT NULL").fetchone() == (True,)
    assert not (tmp_path / "data" / "audit.db").exists()


def test_make_secrets_makes_owner_only_secrets_once_and_keeps_a_team_s_key(
    tmp_path: Path,
) -> None:
    """compose.yaml's secrets, team key included: made by docker/make-secrets.sh, never
    overwritten, so a team's key copied in first is the one every gate uses."""
    compose = _compose()
    assert {"pg_password", "pgpass", "team_key"} <= set(compose["secrets"])
    mounted = {
        s if isinstance(s, str) else s["source"] for s in compose["services"]["gate"]["secrets"]
    }
    assert "team_key" in mounted
    made = tmp_path / "made"
    run = ["sh", str(DOCKER / "make-secrets.sh"), str(made)]
    first = subprocess.run(run, check=True, capture_output=True, text=True)
    assert "made a team key" in first.stderr
    files = {p.name: p for p in made.iterdir()}
    assert set(files) == {"pg_password", "pgpass", "team_key"}
    for path in files.values():
        assert path.stat().st_mode & 0o777 == 0o600, path
    password = files["pg_password"].read_text().strip()
    key = files["team_key"].read_text().strip()
    assert re.fullmatch(r"[0-9a-f]{48}", password) and re.fullmatch(r"[0-9a-f]{64}", key)
    assert files["pgpass"].read_text() == f"postgres:5432:gate:gate:{password}\n"
    from gate.ask import team_key

    assert team_key.load(files["team_key"]).id  # gate takes it as a team key
    again = subprocess.run(run, check=True, capture_output=True, text=True)
    assert "made a team key" not in again.stderr
    assert files["team_key"].read_text().strip() == key  # kept
    joined = tmp_path / "joined"
    joined.mkdir()
    (joined / "team_key").write_text(key + "\n")  # the team's key, copied in first
    subprocess.run(["sh", str(DOCKER / "make-secrets.sh"), str(joined)], check=True)
    assert (joined / "team_key").read_text().strip() == key
    assert (joined / "team_key").stat().st_mode & 0o777 == 0o600
