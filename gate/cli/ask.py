"""`gate pending`, `gate approve`, `gate redact`, `gate block`: answer a parked request."""

from __future__ import annotations

import time
from typing import Any

import click

from gate import dirs
from gate.ask.client import ControlClient
from gate.ask.questions import DEFAULT_SCOPE, SCOPES
from gate.cli.common import echo_json, json_option


@click.command("pending")
@json_option
def pending_cmd(as_json: bool) -> None:
    """List the questions waiting for an answer (masked previews only).

    Answer one with `gate approve ID`, `gate redact ID` or `gate block ID`, or open the
    approval page (its URL is printed below the list).
    """
    control = ControlClient.find(dirs.data_dir())
    questions = control.pending()
    if as_json:
        echo_json({"pending": questions})
        return
    if not questions:
        click.echo("No pending questions.")
    for q in questions:
        _show(q)
    click.echo(f"Approval page: {control.page_url}")
    click.echo(f"Console: {control.console_url}")


def _answer_command(answer: str, doc: str, remember: str) -> click.Command:
    @click.command(answer, help=doc)
    @click.argument("question_id", metavar="ID")
    @click.option(
        "--remember",
        type=click.Choice([s.value for s in SCOPES]),
        default=DEFAULT_SCOPE.value,
        show_default=True,
        help=f"{remember} (stored as a keyed fingerprint, never the value).",
    )
    def command(question_id: str, remember: str) -> None:
        _answer(question_id, answer, remember)

    return command


approve_cmd = _answer_command(
    "approve",
    "Send the request as the agent wrote it (the findings included). For a loosen-rule"
    " question: let the rule file's change take effect.",
    "Also approve identical content later: in this session, this project, or everywhere",
)
redact_cmd = _answer_command(
    "redact",
    "Send the request with the findings replaced by placeholders.",
    "Also redact identical content later without asking",
)
block_cmd = _answer_command(
    "block",
    "Do not send the request; the agent gets an error saying gate blocked it, and why."
    " For a loosen-rule question: keep the rules in force.",
    "Also block requests with identical content later without asking",
)


def _answer(qid: str, answer: str, remember: str) -> None:
    reply = ControlClient.find(dirs.data_dir()).answer(qid, answer, remember)
    remember = str(reply.get("remember") or remember)  # a loosen-rule answer is once only
    scope = "" if remember == "once" else f" (remembered: {remember})"
    click.echo(f"{reply['id']}: {reply['answer']}{scope}")


def _show(q: dict[str, Any]) -> None:
    r = q.get("request", {})
    if q.get("expires") is None:  # no request waits on it (a loosen-rule question)
        click.echo(
            f"{q['id']}  {q['kind']}  {r.get('file')} changed while gate runs; its rules"
            f" stay in force until answered (approve: the change takes effect, block:"
            " the rules stay)"
        )
    else:
        left = max(0, int(q.get("expires", 0) - time.time()))
        click.echo(
            f"{q['id']}  {q['kind']}  {r.get('agent') or 'agent?'} → {r.get('upstream')}"
            f" {r.get('path')}  ({q['default']} in {left} s)"
        )
    for f in q.get("findings", []):
        if q.get("expires") is None:
            click.echo(f"    {f['rule']}  {f['where']}  {f['preview']}")
        else:
            where = f.get("file") or f.get("tool") or ""
            click.echo(f"    {f['kind']}  {f['rule']}  {where}  {f['preview']}")
        for line in str(f.get("context") or "").splitlines():
            click.echo(f"      | {line}")


COMMANDS = (pending_cmd, approve_cmd, redact_cmd, block_cmd)
