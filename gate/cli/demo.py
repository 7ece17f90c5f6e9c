"""`gate demo`: gate at work in one command, with no key and no network."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

import click

from gate import log
from gate.ask.client import ControlClient
from gate.errors import GateError

if TYPE_CHECKING:
    from gate.demo.stage import Stage

ANSWERS = ("approve", "redact", "block")


@click.command("demo")
@click.option(
    "--answer",
    type=click.Choice(ANSWERS),
    default=None,
    help="Answer gate's question with this instead of asking you.",
)
def demo_cmd(answer: str | None) -> None:
    """Watch gate withhold a .env file and ask about a token, then read its audit.

    Starts a gate and a fake model provider on 127.0.0.1, in a temp dir removed at the end:
    no API key, no network, nothing of yours read or written. A scripted agent reads
    `.env` and `cat`s a file holding a token; gate withholds the first and asks you about
    the second (answer here, or with `gate approve|redact|block ID` in another terminal).
    """
    # Imported here: the stage starts a gate, and loading the proxy would slow every
    # other command's start.
    from gate.demo.stage import Stage

    log.configure(stderr=False)
    with Stage(ask=True) as stage:
        # The tour's gate, audit and rules are the stage's own, never the user's.
        os.environ["GATE_DATA_DIR"] = str(stage.data)
        os.environ["GATE_CONFIG_DIR"] = str(stage.root / "config")
        _tour(stage, answer)
        click.echo(f"\nDone. The temp dir {stage.root} is removed; nothing else was touched.")


def _tour(stage: Stage, answer: str | None) -> None:
    from gate.demo.stage import ENV_FILE, TOKEN_FILE

    _say(f"1. The agent reads {ENV_FILE} (STRIPE_KEY=...).")
    stage.read_env()
    _sent(stage, "the model provider got")
    _say(f"2. The agent runs `cat {TOKEN_FILE}`, which holds a GitHub token.")
    seen = len(stage.fake.seen)
    sender = threading.Thread(target=_send_quietly, args=(stage,), daemon=True)
    sender.start()
    question = _question(stage)
    kinds = ", ".join(sorted({str(f.get("kind")) for f in question.get("findings", [])}))
    qid = str(question["id"])
    click.echo(f"   gate parked the request and asks: send a {kinds or 'secret'}?  (id {qid})")
    click.echo(f"   answer with: GATE_DATA_DIR={stage.data} gate approve|redact|block {qid}")
    click.echo(f"   or on the page: {ControlClient.find(stage.data).page_url}")
    _answer(stage, qid, answer)
    sender.join(timeout=60)
    if len(stage.fake.seen) > seen:
        _sent(stage, "then the model provider got")
    else:
        click.echo(
            "   gate blocked the request: the model provider got nothing; the agent"
            " got an error saying why."
        )
    leaked = stage.leaked()
    click.echo(
        f"   on the wire: {', '.join(leaked)} (you approved it)"
        if leaked
        else "   on the wire: neither the .env value nor the token."
    )
    _say("3. What gate kept: `gate log`, then `gate show` of each request.")
    rows = json.loads(_gate("log", "--json"))["requests"]
    click.echo(_gate("log"))
    for row in reversed(rows):
        click.echo(f"\n$ gate show {row['id']}")
        click.echo(_gate("show", str(row["id"])))


def _send_quietly(stage: Stage) -> None:
    with contextlib.suppress(OSError):  # blocked: gate answered with an error, as shown
        stage.cat_token_file()


def _question(stage: Stage) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if pending := ControlClient.find(stage.data).pending():
                return pending[0]
        except GateError:
            pass
        time.sleep(0.1)
    raise GateError("the demo's question never came", hint="run `gate doctor`")


def _answer(stage: Stage, qid: str, answer: str | None) -> None:
    if answer is None and sys.stdin.isatty():
        answer = click.prompt("   your answer", type=click.Choice(ANSWERS), default="redact")
    elif answer is None:
        answer = "redact"
        click.echo("   (not a terminal: answering redact)")
    try:
        ControlClient.find(stage.data).answer(qid, answer)
    except GateError:  # answered meanwhile in another terminal or on the page
        click.echo("   (already answered)")


def _sent(stage: Stage, what: str) -> None:
    body = json.loads(stage.fake.seen[-1])
    result = body["messages"][-1]["content"][0]["content"]
    click.echo(f"   {what}: {result.strip()[:300]}")


def _gate(*args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-m", "gate", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ,
        check=False,
    )
    return proc.stdout.rstrip() or proc.stderr.rstrip()


def _say(text: str) -> None:
    click.echo(click.style(f"\n{text}", bold=True))


COMMANDS = (demo_cmd,)
