"""Claude Code's documented path-rule semantics, as a table (rule, path → withheld?).

Anchors: `//abs`, `~/home`, `/relative-to-the-rule-file`, `./project`, bare = any depth;
`*` within a segment, `**` across segments; a pattern covers what lies beneath it.
Project root /work/proj, rule file root /work/proj (a project .gate/rules.yaml), home ~.
"""

from __future__ import annotations

import os

import pytest

from gate.agents.actions import Action, Verb
from gate.rules.model import Effect
from rule_kit import ROOT, one_rule

HOME = "~"
CASES = [
    # ./ anchors at the project root
    ("./.env", f"{ROOT}/.env", True),
    ("./.env", f"{ROOT}/api/.env", False),
    ("./.env", f"{ROOT}/.env.local", False),
    ("./.env", f"{ROOT}/.envrc", False),
    ("./.env.*", f"{ROOT}/.env.production", True),
    ("./.env.*", f"{ROOT}/.env", False),
    ("./secrets/**", f"{ROOT}/secrets/a/b/c.txt", True),
    ("./secrets/**", f"{ROOT}/src/secrets/x", False),
    ("./secrets", f"{ROOT}/secrets/k.json", True),  # a directory covers its files
    ("./secrets/", f"{ROOT}/secrets/k.json", True),
    ("./config/credentials.json", f"{ROOT}/config/credentials.json", True),
    ("./config/credentials.json", f"{ROOT}/config/credentials.json.bak", False),
    ("./src/*.ts", f"{ROOT}/src/a.ts", True),
    ("./src/*.ts", f"{ROOT}/src/lib/a.ts", False),  # * stays within one segment
    ("./src/**/*.ts", f"{ROOT}/src/lib/deep/a.ts", True),
    ("./src/**/*.ts", f"{ROOT}/src/a.ts", True),  # ** matches zero segments too
    ("./*.{pem,key}", f"{ROOT}/server.key", True),
    ("./*.{pem,key}", f"{ROOT}/server.crt", False),
    ("./file?.txt", f"{ROOT}/file1.txt", True),
    ("./file?.txt", f"{ROOT}/file12.txt", False),
    ("./[ab].txt", f"{ROOT}/a.txt", True),
    ("./[ab].txt", f"{ROOT}/c.txt", False),
    ("./.ENV", f"{ROOT}/.env", False),  # case-sensitive
    ("./my docs/*", f"{ROOT}/my docs/x.txt", True),
    ("./src/*/index.js", f"{ROOT}/src/app/index.js", True),
    # bare names match at any depth under the project root
    (".env", f"{ROOT}/.env", True),
    (".env", f"{ROOT}/services/api/.env", True),
    (".env", "/elsewhere/.env", False),
    (".env", f"{ROOT}/.env.example", False),
    ("*.env", f"{ROOT}/deep/prod.env", True),
    ("*.pem", f"{ROOT}/a/b/c/cert.pem", True),
    ("**/*.pem", f"{ROOT}/cert.pem", True),
    ("**/id_rsa*", f"{ROOT}/deploy/id_rsa", True),
    ("**/id_rsa*", f"{ROOT}/deploy/id_rsa.pub", True),
    ("src/**", f"{ROOT}/pkg/src/a.py", True),  # deny: a directory pattern at any depth
    ("secrets", f"{ROOT}/a/secrets/b.txt", True),
    ("credentials.json", f"{ROOT}/x/credentials.json", True),
    ("credentials.json", f"{ROOT}/x/credentials.json5", False),
    # ~/ is the home directory
    ("~/.ssh/**", "~/.ssh/id_ed25519", True),
    ("~/.ssh/**", "~/.ssh/config", True),
    ("~/.ssh/**", "~/.sshx/config", False),
    ("~/.ssh", "~/.ssh/known_hosts", True),
    ("~/.aws/credentials", "~/.aws/credentials", True),
    ("~/.aws/credentials", "~/.aws/config", False),
    ("~/.config/gcloud/**", "~/.config/gcloud/legacy_credentials/a/adc.json", True),
    ("~/*.key", "~/a.key", True),
    ("~/*.key", "~/sub/a.key", False),
    ("~/.netrc", f"{ROOT}/.netrc", False),
    # // is an absolute path
    ("//etc/secrets/**", "/etc/secrets/db", True),
    ("//etc/secrets/**", f"{ROOT}/etc/secrets/db", False),
    ("//etc/passwd", "/etc/passwd", True),
    ("//etc/passwd", "/etc/passwd-", False),
    ("//var/**/*.log", "/var/log/app/x.log", True),
    ("//c/Users/**/.env", "/c/Users/alice/proj/.env", True),
    # / is relative to the rule file's root (here the project)
    ("/config/*.json", f"{ROOT}/config/prod.json", True),
    ("/config/*.json", f"{ROOT}/config/sub/prod.json", False),
    ("/config/*.json", "/config/prod.json", False),  # not an absolute path
    ("/build/", f"{ROOT}/build/out/app.js", True),
    ("/.env", f"{ROOT}/.env", True),
    ("/.env", f"{ROOT}/sub/.env", False),
    ("/**/.env", f"{ROOT}/a/b/.env", True),
]


@pytest.mark.parametrize(("spec", "path", "hit"), CASES)
def test_path_rules(spec: str, path: str, hit: bool) -> None:
    policy = one_rule(Effect.DENY, f"Read({spec})")
    target = os.path.expanduser(path)
    decision = policy.decide(Action(verb=Verb.READ, tool="Read", target=target), ROOT)
    assert (decision.effect is Effect.DENY) is hit


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 60
