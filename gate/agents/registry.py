"""Known agents: how `gate run` recognises them and which variables point them at gate."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gate.agents import claude_code

Env = Callable[[str], dict[str, str]]


def _generic_env(base: str) -> dict[str, str]:
    # The official SDKs read these; a generic command may use any of them.
    return {
        "ANTHROPIC_BASE_URL": f"{base}/anthropic",
        "OPENAI_BASE_URL": f"{base}/openai/v1",
        "GOOGLE_GEMINI_BASE_URL": f"{base}/gemini",
    }


def _claude_env(base: str) -> dict[str, str]:
    return {claude_code.BASE_URL_ENV: f"{base}/anthropic"}


@dataclass(frozen=True, slots=True)
class Agent:
    name: str
    commands: tuple[str, ...]
    env: Env
    user_agents: tuple[str, ...] = ()


AGENTS: Mapping[str, Agent] = {
    a.name: a for a in (
        Agent(claude_code.NAME, claude_code.COMMANDS, _claude_env, ("claude-cli/",)),
        Agent("generic", (), _generic_env),
    )
}


def get(name: str) -> Agent:
    try:
        return AGENTS[name]
    except KeyError:
        known = ", ".join(sorted(AGENTS))
        raise ValueError(f"unknown agent {name!r}; known agents: {known}") from None


def detect(argv: list[str]) -> Agent:
    """The agent a command runs, from its executable's name; `generic` when unknown."""
    exe = os.path.basename(argv[0]) if argv else ""
    exe = exe.removesuffix(".exe").removesuffix(".cmd")
    for agent in AGENTS.values():
        if exe in agent.commands:
            return agent
    return AGENTS["generic"]


def from_user_agent(user_agent: str) -> str | None:
    ua = user_agent.lower()
    for agent in AGENTS.values():
        if any(ua.startswith(prefix) for prefix in agent.user_agents):
            return agent.name
    return None


_MARK = "http://gate.invalid"


def inherited_upstreams(agent: Agent, environ: Mapping[str, str],
                        skip: frozenset[str] = frozenset()) -> dict[str, tuple[str, str]]:
    """Base URLs the user already set for this agent: NAME → (variable, upstream URL).

    `gate run` must not silently move a user from their own gateway to the public API, so
    a base URL set in the environment becomes the upstream gate forwards to. (The caller
    leaves out URLs that answer as a gate.)
    """
    out: dict[str, tuple[str, str]] = {}
    for var, ours in agent.env(_MARK).items():
        current = environ.get(var, "").strip().rstrip("/")
        if not current:
            continue
        name, _, suffix = ours.removeprefix(_MARK + "/").partition("/")
        if name in skip:  # named with --upstream: that wins
            continue
        suffix = "/" + suffix if suffix else ""
        if suffix and not current.endswith(suffix):
            raise ValueError(f"{var}={current} does not end in {suffix}: gate cannot forward"
                             f" to it; fix it or pass --upstream {name}=URL")
        out[name] = (var, current.removesuffix(suffix) if suffix else current)
    return out
