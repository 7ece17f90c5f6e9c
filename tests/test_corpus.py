"""Real request bodies from real agent CLIs (tests/corpus/<agent>/<case>.json), each decided
the way gate decides it: format from the path, walker, tool → action, default rules.

Every file is the request that carried the results of a read of `.env` and a `cat .env`
(tests/corpus/capture.py records them). The checks: each call maps to the expected action
and verdict; `screen` withholds exactly those results; the rewritten body keeps every call
id, item and order; and with the project's files on disk, the `.env` value never survives.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from gate import providers
from gate.agents import tools
from gate.providers.segments import Walk
from gate.rules.layers import PolicyStore
from gate.rules.model import Effect
from gate.screen.fingerprints import IndexStore
from gate.screen.request import Outbound, Screens, screen

CORPUS = Path(__file__).parent / "corpus"
FILES = sorted(CORPUS.glob("*/*.json"))
ROOT = "/work/project"
_ITEMS = ("messages", "input", "contents")  # where each format keeps the conversation


def _load(file: Path) -> tuple[dict[str, Any], ModuleType]:
    entry = json.loads(file.read_text())
    fmt = providers.detect(entry["path"])
    if fmt is None:
        pytest.skip(f"gate does not recognise {entry['path']} yet")
    assert entry["format"] == fmt.FORMAT
    return entry, fmt


def _items(body: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Each conversation item's kind and keys, in order: what a rewrite must keep."""
    items = next((body[k] for k in _ITEMS if isinstance(body.get(k), list)), [])
    return [(i.get("type"), i.get("role"), sorted(i)) for i in items]


def _calls(walk: Walk) -> list[tuple[str, str, Any]]:
    return [(c.id, c.name, c.result) for c in walk.calls]


def assert_still_valid(fmt: ModuleType, before: dict[str, Any], sent: bytes) -> None:
    after = json.loads(sent)
    assert sorted(after) == sorted(before)
    assert _items(after) == _items(before)
    assert _calls(fmt.walk(after)) == _calls(fmt.walk(before))


def test_the_corpus_covers_every_agent() -> None:
    agents = {f.parent.name for f in FILES}
    assert {"claude-code", "codex", "opencode", "gemini-cli", "copilot", "aider"} <= agents


@pytest.mark.parametrize("file", FILES, ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_calls_map_to_the_expected_actions_and_verdicts(file: Path) -> None:
    entry, fmt = _load(file)
    body = entry["body"]
    policies = PolicyStore(warn=False)
    policy = policies.policy_for(ROOT)
    got = []
    for call in fmt.walk(body).calls:
        action = tools.action(call.name, call.input, ROOT)
        decision = policy.decide(action, ROOT)
        got.append(
            {
                "id": call.id,
                "name": call.name,
                "verb": str(action.verb),
                "target": action.target,
                "withheld": decision.rule is not None
                and decision.effect in (Effect.DENY, Effect.ASK),
            }
        )
    assert got == entry["expect"]["calls"]

    raw = json.dumps(body).encode()
    verdict = screen(
        Outbound(path=entry["path"], body=raw, agent=entry["agent"], project_root=ROOT), policies
    )
    withheld = [w.call_id for w in verdict.withheld if w.kind == "tool-result"]
    assert sorted(withheld) == sorted(c["id"] for c in got if c["withheld"])
    if verdict.body is not None:
        assert_still_valid(fmt, body, verdict.body)


@pytest.mark.parametrize("file", FILES, ids=lambda f: f"{f.parent.name}/{f.stem}")
def test_the_env_value_never_survives_screening(file: Path, gate_dirs: dict[str, Path]) -> None:
    entry, fmt = _load(file)
    project = gate_dirs["project"]
    for name in (".env", ".env.local"):  # as the capture wrote them
        (project / name).write_text(f"API_TOKEN={entry['secret']}\n")
    raw = json.dumps(entry["body"]).replace(ROOT, str(project)).encode()
    assert entry["secret"].encode() in raw
    verdict = screen(
        Outbound(path=entry["path"], body=raw, agent=entry["agent"], project_root=str(project)),
        PolicyStore(warn=False),
        Screens(IndexStore()),
    )
    assert verdict.body is not None
    assert entry["secret"].encode() not in verdict.body
    assert_still_valid(fmt, json.loads(raw), verdict.body)
