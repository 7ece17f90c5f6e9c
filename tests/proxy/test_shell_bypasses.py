"""Shell commands that read .env, the usual bypasses of agent-side rules included: each is
withheld by rule or by content, and the fake provider receives no byte of the file."""

from __future__ import annotations

from pathlib import Path

import anthropic
import pytest

from conftest import fake_secret
from fake_provider import FakeProvider
from gate.agents import tools
from gate.rules.layers import PolicyStore
from gate.rules.model import Effect
from messages import conversation, tool_turn

RULE, CONTENT, NONE = "rule", "content", "none"
# (command, verdict): RULE = the command is seen to read .env and its result is withheld
# whole; CONTENT = gate cannot tell from the command, and the value is replaced wherever it
# appears in the output; NONE = the command does not touch .env.
COMMANDS = [
    ("cat .env", RULE),
    ("cat ./.env", RULE),
    ("cat $PWD/.env", RULE),
    ("head -n 5 .env", RULE),
    ("tail -1 .env", RULE),
    ("less .env", RULE),
    ("sed -n 1,5p .env", RULE),
    ("awk '{print}' .env", RULE),
    ("cut -d= -f2 .env", RULE),
    ("sort .env", RULE),
    ("grep KEY .env", RULE),
    ("grep -e KEY .env", RULE),
    ("rg STRIPE .env", RULE),
    ("base64 .env", RULE),
    ("xxd .env", RULE),
    ("od -c .env", RULE),
    ("strings .env", RULE),
    ("nl .env", RULE),
    ("cp .env /dev/stdout", RULE),
    ("tar -cO .env", RULE),
    ("source .env && env", RULE),
    (". ./.env; printenv", RULE),
    ("cat < .env", RULE),
    ("wc -c < .env", RULE),
    ("cat<.env|head", RULE),
    ("cd config && cat ../.env", RULE),
    ("(cd config; cat ../.env)", RULE),
    ("{ cat .env; }", RULE),
    ("echo $(cat .env)", RULE),
    ('V=.env; cat "$V"', RULE),
    ("F=.env && head -3 ${F}", RULE),
    ("timeout 5 cat .env", RULE),
    ("nice -n 5 cat .env", RULE),
    ("env -i cat .env", RULE),
    ("sudo cat .env", RULE),
    ("bash -c 'cat .env'", RULE),
    ('sh -lc "grep . .env"', RULE),
    ("git status && cat .env", RULE),
    ("ls -la\ncat .env", RULE),
    # Named anywhere in the command's text: inline scripts, heredocs, git revisions, links.
    ("python3 -c \"print(open('.env').read())\"", RULE),
    ("node -e \"console.log(require('fs').readFileSync('.env','utf8'))\"", RULE),
    ("ruby -e \"puts File.read('.env')\"", RULE),
    ("perl -ne print .env", RULE),
    ("python3 - <<'EOF'\nprint(open('.env').read())\nEOF", RULE),
    ("python3 -c \"import base64;print(base64.b64encode(open('.env','rb').read()))\"", RULE),
    ("git show HEAD:.env", RULE),
    ("git log -p -- .env", RULE),
    ("git diff HEAD~1 -- .env", RULE),
    ("docker compose config", RULE),
    ("docker-compose config", RULE),
    ("ln -s .env x && cat x", RULE),
    ("cp .env /tmp/x; cat /tmp/x", RULE),
    ("c''at .e\"\"nv", RULE),
    ('cat "$(echo .env)"', RULE),
    ("F=.e; cat ${F}nv", RULE),
    ("tac .env", RULE),
    ("sed -n p .env", RULE),
    ("rev .env", RULE),
    ("xxd -p .env", RULE),
    ("awk 1 < .env", RULE),
    ("while read l; do echo $l; done < .env", RULE),
    ("exec 3<.env; cat <&3", RULE),
    ("mapfile -t a < .env; echo ${a[@]}", RULE),
    # Globs, expanded against the disk as the shell would.
    ("cat .e*", RULE),
    ("cat .en?", RULE),
    ("cat ./.[e]nv", RULE),
    ("find . -name '.e*' -exec cat {} \\;", RULE),
    # What gate cannot tell from the text: the value is withheld wherever it appears.
    ("python3 -c \"print(open('.e'+'nv').read())\"", CONTENT),
    ("cat $F", CONTENT),
    ("grep -r STRIPE .", CONTENT),
    ("printenv", CONTENT),
    ("ls -la", NONE),
    ("git log --oneline -3", NONE),
    ("cat README.md", NONE),
]


def test_the_table_is_large_enough() -> None:
    assert len(COMMANDS) >= 40


@pytest.mark.parametrize(("command", "verdict"), COMMANDS)
def test_verdict_by_rule(command: str, verdict: str, gate_dirs: dict[str, Path]) -> None:
    root = str(gate_dirs["project"])
    (gate_dirs["project"] / ".env").write_text("K=v\n")  # globs expand against the disk
    decision = (
        PolicyStore()
        .policy_for(root)
        .decide(tools.action("Bash", {"command": command}, root), root)
    )
    assert (decision.effect is Effect.DENY) is (verdict == RULE)


def test_no_byte_of_the_file_leaves(
    client: anthropic.Anthropic, provider: FakeProvider, gate_dirs: dict[str, Path]
) -> None:
    project = gate_dirs["project"]
    (project / "config").mkdir()
    secret = fake_secret("sk_live_")
    env_text = f"STRIPE_KEY={secret}\n"
    (project / ".env").write_text(env_text)
    turns = []
    for i, (command, verdict) in enumerate(COMMANDS):
        output = "README.md\nsrc\n" if verdict == NONE else f"out: {env_text}"
        turns.append(tool_turn(f"toolu_{i:02}", "Bash", {"command": command}, output))
    client.messages.create(**conversation(str(project), *turns))
    sent = provider.seen[-1].json()
    assert secret not in provider.seen[-1].body.decode()
    for i, (command, verdict) in enumerate(COMMANDS):
        result = sent["messages"][2 + 2 * i]["content"][0]["content"]
        if command == "printenv":  # calls before it sourced .env in the same shell
            verdict = RULE
        if verdict == RULE:
            assert result.startswith("[gate: content withheld. Bash command"), command
        elif verdict == CONTENT:
            assert (
                result == "out: STRIPE_KEY=[gate: withheld a value from .env (rule"
                f" Read(./.env), {result.split(', ', 1)[1]}"
            ), command
        else:
            assert result == "README.md\nsrc\n", command
