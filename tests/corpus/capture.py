"""Record what real agent CLIs send, as corpus files for tests/test_corpus.py.

    python tests/corpus/capture.py [AGENT | AGENT/CASE ...]

Each case (tests/agent_clis.py) runs the agent headless, wired exactly as `gate run` wires
it, but straight at a recording fake model on loopback (no gate in between, so the body is
the agent's own). The fake model calls the agent's read tool on `.env`, then its shell tool
with `cat .env`, then answers; the request that carries both results is scrubbed (temporary
paths → /work/project and /work/home, ids → fixed values, the fake .env value → a fixed
fake) and written to tests/corpus/<agent>/<case>.json with gate's current verdict on each
call as `expect`. Review that verdict before committing a new file. Binaries come from PATH
or GATE_TEST_<EXE>_BIN; a case whose binary is absent is skipped.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the tests/ helpers
sys.path.insert(0, str(HERE.parent.parent))  # gate itself, when not installed

from agent_clis import CASES, PROMPT, BlackHole, Case, environment, project_files  # noqa: E402
from agent_script import steps, tool_results  # noqa: E402
from fake_models import FakeModels  # noqa: E402
from fake_provider import Seen  # noqa: E402
from gate.agents import registry, tools  # noqa: E402
from gate.rules.layers import PolicyStore  # noqa: E402
from gate.rules.model import Effect  # noqa: E402

ROOT = "/work/project"
SECRET = "fake-corpus-value-5f2b8c1e9a7d4630"  # stands in for the run's fake .env value
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.I)
_IDS = (re.compile(r"\bses_[0-9A-Za-z]{20,}"), re.compile(r"\b[0-9a-f]{64}\b"))


def version(binary: str, env: dict[str, str]) -> str:
    out = subprocess.run(
        [binary, "--version"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    m = re.search(r"\d+\.\d+\.\d+", out.stdout + out.stderr)
    return m.group(0) if m else "unknown"


def install_dir(binary: str) -> Path | None:
    """Where an npm-installed agent lives (it names its bundled files by absolute path)."""
    real = Path(os.path.realpath(binary))
    return next((p.parent for p in real.parents if p.name == "node_modules"), None)


def scrub(text: str, tmp: Path, secret: str, installed: Path | None) -> str:
    """Temporary paths, ids and the run's fake value, replaced the same way everywhere."""
    paths = [(tmp / "project", ROOT), (tmp / "home", "/work/home"), (tmp, "/work")]
    if installed is not None:
        paths.insert(0, (installed, "/usr/local/lib"))
    for path, to in paths:
        text = text.replace(str(path), to)
    text = text.replace(secret, SECRET)
    fixed: dict[str, str] = {}

    def same_length(m: re.Match[str]) -> str:
        s = m.group(0)
        return fixed.setdefault(s, s[:4] + str(len(fixed) + 1).zfill(len(s) - 4))

    text = _UUID.sub(
        lambda m: fixed.setdefault(
            m.group(0).lower(), f"00000000-0000-4000-8000-{len(fixed) + 1:012d}"
        ),
        text,
    )
    for pattern in _IDS:
        text = pattern.sub(same_length, text)
    return text


def pick(c: Case, seen: list[Seen], secret: str) -> Seen:
    """The request that answers every call (or, for an agent without tools, holds the file)."""
    bodies = [s for s in seen if s.body and s.method == "POST"]
    if not c.calls(Path(ROOT)):
        return next(s for s in bodies if secret.encode() in s.body)
    return max(reversed(bodies), key=lambda s: tool_results(c.format, s.json()))


def expect(body: dict[str, Any], path: str) -> list[dict[str, Any]]:
    """gate's verdict on each call in the body, with the project at /work/project."""
    from gate import providers

    fmt = providers.detect(path)
    if fmt is None:
        return []
    policy = PolicyStore(warn=False).policy_for(ROOT)
    out = []
    for call in fmt.walk(body).calls:
        action = tools.action(call.name, call.input, ROOT)
        decision = policy.decide(action, ROOT)
        out.append(
            {
                "id": call.id,
                "name": call.name,
                "verb": str(action.verb),
                "target": action.target,
                "withheld": decision.rule is not None
                and decision.effect in (Effect.DENY, Effect.ASK),
            }
        )
    return out


def capture(c: Case, binary: str, tmp: Path) -> dict[str, Any]:
    project, home = tmp / "project", tmp / "home"
    project.mkdir()
    home.mkdir()
    # gate's verdict below comes from the shipped rules only, not this machine's.
    os.environ["GATE_CONFIG_DIR"] = str(tmp / "gate-config")
    os.environ["GATE_MANAGED_RULES"] = str(tmp / "no-managed-rules.yaml")
    secret = "fake-" + os.urandom(16).hex()
    project_files(project, secret)
    models = FakeModels(script=steps(*c.calls(project), answer=c.answer)).start()
    hole = BlackHole()
    try:
        env = environment(c, home, project, hole.url)
        spec = registry.get(c.agent)
        env.update(spec.env(models.url))
        argv = registry.command(spec, [binary, *c.argv(PROMPT)], models.url)
        proc = subprocess.run(
            argv,
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"{c.agent} exited {proc.returncode}: {proc.stderr[-2000:]}")
        chosen = pick(c, models.seen, secret)
        entry = {
            "agent": c.agent,
            "version": version(binary, env),
            "format": c.format,
            # The path gate's walker sees: without the upstream's name.
            "path": "/" + chosen.path.split("/", 2)[2],
            "secret": SECRET,
            "body": chosen.json(),
        }
    finally:
        hole.stop()
        models.stop()
    text = scrub(json.dumps(entry), tmp, secret, install_dir(binary))
    leaked = [v for v in c.env().values() if v.startswith(("sk-", "fake-")) and v in text]
    assert not leaked and secret not in text, "a fake key or value survived the scrub"
    entry = json.loads(text)
    entry["expect"] = {"calls": expect(entry["body"], entry["path"])}
    return entry


def main(names: list[str]) -> int:
    for c in CASES:
        if names and c.agent not in names and f"{c.agent}/{c.name}" not in names:
            continue
        binary = c.binary()
        if binary is None:
            print(f"skip {c.agent}/{c.name}: no {c.exe} (set {c.bin_env})")
            continue
        with tempfile.TemporaryDirectory(prefix="gate-corpus-") as tmp:
            entry = capture(c, binary, Path(tmp))
        out = HERE / c.agent / f"{c.name}.json"
        out.parent.mkdir(exist_ok=True)
        out.write_text(json.dumps(entry, indent=1, ensure_ascii=False) + "\n")
        calls = ", ".join(
            f"{x['name']}→{'withheld' if x['withheld'] else 'sent'}"
            for x in entry["expect"]["calls"]
        )
        print(
            f"{out.relative_to(HERE)}: {entry['agent']} {entry['version']} {entry['path']}"
            f" [{calls}]"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
