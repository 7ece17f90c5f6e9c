"""`gate rules`: the rules in force for a project, and what they decide for one tool call."""

from __future__ import annotations

import json
import os
import re
from dataclasses import replace
from typing import Any

import click

from gate import dirs, log
from gate.agents import tools
from gate.agents.actions import Action, Verb
from gate.ask.client import ControlClient
from gate.ask.questions import LOOSEN_RULE
from gate.cli.common import echo_json, json_option
from gate.errors import GateError, RuleError
from gate.rules import names
from gate.rules.engine import Decision, Policy
from gate.rules.layers import PolicyStore, find_root
from gate.rules.model import Effect, Kind, Rule

_ORDER = {Effect.DENY: 0, Effect.ASK: 1, Effect.ALLOW: 2}
_CALL = re.compile(r"^(?P<tool>[A-Za-z_][A-Za-z0-9_.-]*)(?:\((?P<arg>.*)\))?$", re.S)
_SHORTCUTS = {"read": "Read", "edit": "Edit", "bash": "Bash", "fetch": "WebFetch"}

project_option = click.option(
    "--project",
    type=click.Path(exists=True, file_okay=False, resolve_path=True),
    help="The project directory (default: the current directory).",
)


def _walk_incomplete(policy: Policy, root: str) -> list[str]:
    """What the walk a gate makes for this project leaves unread at its configured budget
    (directories, and files read only in part); empty when it reads everything."""
    from gate.cli.common import load_config
    from gate.screen.denied_walk import Limits, Walked, collect

    config = load_config()
    walked = Walked([])
    collect(policy, root, Limits(config.max_files, config.max_file_bytes), walked)
    return walked.unwalked if walked.truncated else []


def _policy(project: str | None) -> tuple[str, Policy, list[dict[str, Any]]]:
    """The rules the files say, and what each running gate enforces instead (a file kept
    at its last good rules, rules held until a person confirms loosening them)."""
    root = find_root(project or os.getcwd())
    try:
        policy = PolicyStore(warn=False).policy_for(root)
    except RuleError:
        _running(root, ())
        raise
    for warning in policy.warnings:
        click.echo(f"gate: warning: {warning}", err=True)
    return root, policy, _running(root, policy.warnings)


def _running(root: str, said: tuple[str, ...]) -> list[dict[str, Any]]:
    """Tell (on stderr) what the running gates of this data dir enforce that the files
    alone do not say, and the loosen-rule questions waiting; [] when none runs."""
    try:
        control = ControlClient.find(dirs.data_dir())
        gates, pending = control.rules(root), control.pending()
    except GateError:
        return []  # no gate runs (or none is reachable from here): the files are the rules
    for g in gates:
        for warning in g.get("warnings", []):
            if warning not in said:
                click.echo(f"gate: warning: the running gate ({g['gate']}): {warning}", err=True)
    for q in pending:
        if q.get("kind") == LOOSEN_RULE:
            rules = ", ".join(str(f.get("rule")) for f in q.get("findings", []))
            click.echo(
                f"gate: question {q['id']} waits for a person: {q['request'].get('file')}"
                f" changed and would loosen {rules}; `gate approve {q['id']}` lets the change"
                f" take effect, `gate block {q['id']}` keeps the rules",
                err=True,
            )
    return gates


@click.group("rules", invoke_without_command=True)
@json_option
@project_option
@click.pass_context
def rules_cmd(ctx: click.Context, as_json: bool, project: str | None) -> None:
    """The rules in force for this project, each with its file:line and effect.

    `gate rules` alone is `gate rules list`; `gate rules check` decides one tool call.
    """
    log.configure(level="WARNING")
    ctx.obj = {"project": project}
    if ctx.invoked_subcommand is None:
        _list(project, as_json)


@rules_cmd.command("list")
@json_option
@project_option
@click.pass_obj
def list_cmd(obj: dict[str, str | None], as_json: bool, project: str | None) -> None:
    """Print the rules in force for this project, each with its file:line and effect."""
    _list(project or obj["project"], as_json)


def _list(project: str | None, as_json: bool) -> None:
    root, policy, running = _policy(project)
    rules = sorted(policy.rules, key=lambda r: _ORDER[r.effect])
    unwalked = _walk_incomplete(policy, root)
    if as_json:
        echo_json(
            {
                "project_root": root,
                "lockdown": policy.lockdown,
                "rules": [_rule_json(r) for r in rules],
                "ignored": [_rule_json(r) for r in policy.ignored],
                "warnings": list(policy.warnings),
                "index_incomplete": bool(unwalked),
                "unwalked": unwalked,
                # what each running gate of this data dir enforces that the files do not say
                "running": [{"gate": g["gate"], "warnings": g["warnings"]} for g in running],
            }
        )
        return
    if unwalked:
        click.echo(
            "gate: warning: the denied-file walk of this project runs out of its budget"
            " (screen.max_files, screen.max_file_bytes): a running gate indexes the rest"
            " in the background, and meanwhile withholds searches over it; raise the"
            " limits in config.yaml to index it at once. Not walked: "
            + ", ".join(unwalked[:10])
            + (", ..." if len(unwalked) > 10 else ""),
            err=True,
        )
    click.echo(
        f"project root: {root}"
        + ("  (lockdown: only managed allow rules count)" if policy.lockdown else "")
    )
    shown = [(r, _note(r)) for r in rules] + [
        (r, "ignored: managed lockdown") for r in policy.ignored
    ]
    width = max((len(r.text) for r, _ in shown), default=0)
    for rule, note in shown:
        line = f"{rule.effect.value:<5}  {rule.text:<{width}}  {rule.where}  [{rule.layer or '-'}]"
        click.echo(f"{line}  ({note})" if note else line)


@rules_cmd.command("check")
@click.argument("call", required=False)
@click.argument("tool_input", metavar="[INPUT]", required=False)
@click.option("--tool", help="A tool name, with --input.")
@click.option(
    "--input",
    "input_text",
    help="The tool's input: a JSON object, or the value of its main field (path, command or URL).",
)
@click.option("--read", help="Check reading this path.")
@click.option("--edit", help="Check editing this path.")
@click.option("--bash", help="Check running this shell command.")
@click.option("--fetch", help="Check fetching this URL.")
@project_option
@json_option
@click.pass_obj
def check_cmd(
    obj: dict[str, str | None],
    call: str | None,
    tool_input: str | None,
    tool: str | None,
    input_text: str | None,
    read: str | None,
    edit: str | None,
    bash: str | None,
    fetch: str | None,
    project: str | None,
    as_json: bool,
) -> None:
    """Decide one tool call against the rules.

    Exit 0 if it is allowed or no rule matches, 1 if its result is withheld (deny or ask).

    \b
    gate rules check 'Read(./.env)'
    gate rules check Bash '{"command": "cat .env"}'
    gate rules check --tool Bash --input 'cat .env'
    gate rules check --read .env | --bash 'curl x' | --fetch https://example.com
    """
    name, given = _call(
        call,
        tool_input,
        tool,
        input_text,
        {"read": read, "edit": edit, "bash": bash, "fetch": fetch},
    )
    project = project or obj["project"]
    cwd = project or os.getcwd()
    root, policy, _ = _policy(project)
    action = replace(tools.action(name, given, cwd), params=names.params_of(given))
    if action.verb in (Verb.READ, Verb.EDIT, Verb.SEARCH) and action.target:
        # A path typed here is relative to where it was typed, as a shell would read it.
        target = os.path.normpath(os.path.join(cwd, os.path.expanduser(action.target)))
        action = replace(action, target=target)
    decision = policy.decide(action, root)
    withheld = decision.effect in (Effect.DENY, Effect.ASK)
    if as_json:
        echo_json(
            {
                "project_root": root,
                "decision": decision.effect,
                "withheld": withheld,
                "action": {
                    "verb": action.verb,
                    "tool": action.tool,
                    "target": action.target,
                    "reads": list(action.reads),
                },
                "path": decision.path,
                "rule": _rule_json(decision.rule) if decision.rule else None,
            }
        )
    else:
        click.echo(_explain(action, decision))
    if withheld:
        raise SystemExit(1)


def _call(
    call: str | None,
    tool_input: str | None,
    tool: str | None,
    input_text: str | None,
    shortcuts: dict[str, str | None],
) -> tuple[str, dict[str, Any]]:
    """The tool name and input the options name; exactly one way of naming them."""
    chosen = [(k, v) for k, v in shortcuts.items() if v is not None]
    ways = len(chosen) + (call is not None) + (tool is not None)
    if ways != 1 or (tool_input is not None and call is None) or (input_text and not tool):
        raise click.UsageError(
            "name one tool call: 'Tool(input)', TOOL INPUT, --tool T"
            " --input X, or one of --read, --edit, --bash, --fetch"
        )
    if chosen:
        name = _SHORTCUTS[chosen[0][0]]
        return name, _input(name, chosen[0][1])
    if tool is not None:
        return tool, _input(tool, input_text)
    assert call is not None
    m = _CALL.match(call.strip())
    if not m or (m.group("arg") is not None and tool_input is not None):
        raise click.UsageError(f"{call!r}: write Tool(input), e.g. 'Read(./.env)', or TOOL INPUT")
    return m.group("tool"), _input(m.group("tool"), m.group("arg") or tool_input)


def _input(tool: str, text: str | None) -> dict[str, Any]:
    if text is None:
        return {}
    if text.lstrip().startswith("{"):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise click.UsageError(f"the input is not a JSON object: {exc}") from exc
        if isinstance(value, dict):
            return value
    keys = tools.TOOLS.get(tool, (None, ()))[1]
    if not keys:
        raise click.UsageError(f"{tool} has no main input gate knows: give a JSON object")
    return {keys[0]: text}


def _explain(action: Action, decision: Decision) -> str:
    what = action.describe(decision.path)
    rule = decision.rule
    if rule is None:
        return f"no rule: {what} (nothing is withheld)"
    head = {
        Effect.DENY: "deny",
        Effect.ASK: "ask (withheld like deny until gate can ask)",
        Effect.ALLOW: "allow",
    }[rule.effect]
    text = f"{head}: {what} matches {rule.text} ({rule.where}, {rule.layer or 'rule file'})"
    if rule.kind is Kind.PARAM:
        text += f"\n  note: at the wire this rule matches nothing yet: {rule.unenforced}"
    return text


def _note(rule: Rule) -> str:
    return f"not enforced: {rule.unenforced}" if rule.unenforced else ""


def _rule_json(rule: Rule) -> dict[str, Any]:
    return {
        "effect": rule.effect,
        "rule": rule.text,
        "tool": rule.tool,
        "specifier": rule.specifier,
        "unless": list(rule.unless),
        "source": rule.source,
        "line": rule.line,
        "where": rule.where,
        "layer": rule.layer,
        "kind": rule.kind,
        "enforced": rule.unenforced is None,
    }


COMMANDS = (rules_cmd,)
