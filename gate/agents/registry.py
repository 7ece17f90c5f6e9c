"""Known agents: how `gate run` recognises them and points them at gate.

Every agent is wired without touching the user's own config files: by environment
variables where the agent reads its base URL from one, by a config overlay passed in an
environment variable (OpenCode), or by flags inserted after the command name (Codex).
What each agent was observed to send is in docs/agents.md.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from gate.agents import claude_code

Env = Callable[[str], dict[str, str]]
Args = Callable[[str], list[str]]


def _generic_env(base: str) -> dict[str, str]:
    # The official SDKs read these; a generic command may use any of them.
    return {
        "ANTHROPIC_BASE_URL": f"{base}/anthropic",
        "OPENAI_BASE_URL": f"{base}/openai/v1",
        "GOOGLE_GEMINI_BASE_URL": f"{base}/gemini",
    }


def _claude_env(base: str) -> dict[str, str]:
    return {claude_code.BASE_URL_ENV: f"{base}/anthropic"}


def _codex_args(base: str) -> list[str]:
    # Codex 0.171 no longer reads OPENAI_BASE_URL. A provider of our own, rather than
    # `openai_base_url`, keeps it on plain HTTP SSE with whole-history bodies: the built-in
    # provider prefers a WebSocket (incremental turns) and zstd-compresses bodies under
    # ChatGPT sign-in. requires_openai_auth sends the key Codex is signed in with.
    provider = (
        f'{{name="gate",base_url="{base}/openai/v1",wire_api="responses",'
        f"requires_openai_auth=true}}"
    )
    return ["-c", f"model_providers.gate={provider}", "-c", "model_provider=gate"]


def _opencode_env(base: str) -> dict[str, str]:
    # OpenCode merges this over its global and project config, and it wins over both; only
    # the base URLs change, so the user's models, keys and permissions still apply.
    overlay = {
        "provider": {
            "anthropic": {"options": {"baseURL": f"{base}/anthropic/v1"}},
            "openai": {"options": {"baseURL": f"{base}/openai/v1"}},
            "google": {"options": {"baseURL": f"{base}/gemini/v1beta"}},
        }
    }
    return {"OPENCODE_CONFIG_CONTENT": json.dumps(overlay, separators=(",", ":"))}


def _gemini_env(base: str) -> dict[str, str]:
    # API-key use reads the first; signed in with Google, Gemini CLI reads the second.
    return {
        "GOOGLE_GEMINI_BASE_URL": f"{base}/gemini",
        "CODE_ASSIST_ENDPOINT": f"{base}/code-assist",
    }


def _copilot_env(base: str) -> dict[str, str]:
    # Only Copilot's own-provider (BYOK) mode can be redirected; the provider the user set
    # becomes the `copilot` upstream. Its WebSocket transport was never tried through gate.
    return {"COPILOT_PROVIDER_BASE_URL": f"{base}/copilot", "COPILOT_PROVIDER_TRANSPORT": "http"}


def _aider_env(base: str) -> dict[str, str]:
    # Aider talks through LiteLLM, which prefers OPENAI_BASE_URL over OPENAI_API_BASE (the
    # one aider's --openai-api-base sets). Listed in the order the user's values win.
    return {
        "OPENAI_BASE_URL": f"{base}/openai/v1",
        "AIDER_OPENAI_API_BASE": f"{base}/openai/v1",
        "OPENAI_API_BASE": f"{base}/openai/v1",
        "ANTHROPIC_API_BASE": f"{base}/anthropic",
        "ANTHROPIC_BASE_URL": f"{base}/anthropic",
        "GEMINI_API_BASE": f"{base}/gemini/v1beta",
    }


def _no_env(base: str) -> dict[str, str]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class Agent:
    name: str
    commands: tuple[str, ...]
    env: Env
    user_agents: tuple[str, ...] = ()  # lowercase prefixes of its user-agent header
    args: Args | None = None  # flags inserted right after the command name
    setup: str = ""  # what to do when an upstream it is wired to is missing


AGENTS: Mapping[str, Agent] = {
    a.name: a
    for a in (
        Agent(
            name=claude_code.NAME,
            commands=claude_code.COMMANDS,
            env=_claude_env,
            user_agents=("claude-cli/",),
        ),
        Agent(
            name="codex",
            commands=("codex",),
            env=_no_env,
            user_agents=(
                "codex_exec/",
                "codex_cli_rs/",
                "codex-tui/",
                "codex_vscode/",
                "codex_sdk_ts/",
            ),
            args=_codex_args,
        ),
        Agent(
            name="opencode", commands=("opencode",), env=_opencode_env, user_agents=("opencode/",)
        ),
        Agent(name="gemini-cli", commands=("gemini",), env=_gemini_env, user_agents=("geminicli",)),
        Agent(
            name="copilot",
            commands=("copilot",),
            env=_copilot_env,
            setup=(
                "Copilot CLI goes through gate only with a model provider of your own (BYOK):"
                " set COPILOT_PROVIDER_BASE_URL (and COPILOT_PROVIDER_TYPE, COPILOT_MODEL, its"
                " key) and gate forwards to it, or pass --upstream copilot=URL"
            ),
        ),
        Agent(name="aider", commands=("aider",), env=_aider_env),
        Agent(name="generic", commands=(), env=_generic_env),
    )
}


def get(name: str) -> Agent:
    """The agent by its name, or by the command that starts it (`claude`, `gemini`)."""
    if name in AGENTS:
        return AGENTS[name]
    by_command = [a for a in AGENTS.values() if name in a.commands]
    if by_command:
        return by_command[0]
    known = ", ".join(sorted(AGENTS))
    raise ValueError(f"unknown agent {name!r}; known agents: {known}")


def detect(argv: list[str]) -> Agent:
    """The agent a command runs, from its executable's name; `generic` when unknown."""
    exe = os.path.basename(argv[0]) if argv else ""
    exe = exe.removesuffix(".exe").removesuffix(".cmd")
    for agent in AGENTS.values():
        if exe in agent.commands:
            return agent
    return AGENTS["generic"]


def command(agent: Agent, argv: list[str], base: str) -> list[str]:
    """The command line to start: the agent's own flags go right after its name."""
    if agent.args is None or not argv:
        return list(argv)
    return [argv[0], *agent.args(base), *argv[1:]]


def from_user_agent(user_agent: str) -> str | None:
    ua = user_agent.lower()
    for agent in AGENTS.values():
        if any(ua.startswith(prefix) for prefix in agent.user_agents):
            return agent.name
    return None


_MARK = "http://gate.invalid"
_ROUTE = re.compile(re.escape(_MARK) + r"/([a-z0-9][a-z0-9_.-]*)")


def routes(agent: Agent) -> frozenset[str]:
    """The upstream names an agent is wired to (`/anthropic`, `/openai`, ...)."""
    texts = [*agent.env(_MARK).values(), *(agent.args(_MARK) if agent.args else ())]
    return frozenset(m.group(1) for t in texts for m in _ROUTE.finditer(t))


def inherited_upstreams(
    agent: Agent, environ: Mapping[str, str], skip: frozenset[str] = frozenset()
) -> dict[str, tuple[str, str]]:
    """Base URLs the user already set for this agent: NAME → (variable, upstream URL).

    `gate run` must not silently move a user from their own gateway to the public API, so
    a base URL set in the environment becomes the upstream gate forwards to. (The caller
    leaves out URLs that answer as a gate.) Variables that are not base URLs are ignored;
    when two variables name the same upstream, the first one the user set wins.
    """
    out: dict[str, tuple[str, str]] = {}
    for var, ours in agent.env(_MARK).items():
        current = environ.get(var, "").strip().rstrip("/")
        if not current or not ours.startswith(_MARK + "/"):
            continue
        name, _, suffix = ours.removeprefix(_MARK + "/").partition("/")
        if name in skip or name in out:  # named with --upstream: that wins
            continue
        suffix = "/" + suffix if suffix else ""
        if suffix and not current.endswith(suffix):
            raise ValueError(
                f"{var}={current} does not end in {suffix}: gate cannot forward"
                f" to it; fix it or pass --upstream {name}=URL"
            )
        out[name] = (var, current.removesuffix(suffix) if suffix else current)
    return out


# Forward mode (`gate run --forward`): the child's proxy and trust settings. Each is set
# in both cases where tools read either, after the parent's copies are removed (getenv
# returns the first match, and a stale lower-case copy would win in some runtimes).
PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "NO_PROXY")
TRUST_VARS = (
    "NODE_EXTRA_CA_CERTS",
    "SSL_CERT_FILE",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "CODEX_CA_CERTIFICATE",
    "NODE_USE_ENV_PROXY",
)
NO_PROXY = "localhost,127.0.0.1,::1"  # OpenCode's TUI talks to its own local server


def forward_env(proxy_url: str, ca_cert: str, bundle: str) -> dict[str, str]:
    """What `gate run --forward` sets for the child (and `gate env --forward` prints)."""
    env: dict[str, str] = {}
    for var in PROXY_VARS:
        value = NO_PROXY if var == "NO_PROXY" else proxy_url
        env[var] = env[var.lower()] = value
    # Node appends NODE_EXTRA_CA_CERTS to its own roots: the CA alone. The others replace
    # the roots, so they get the system's roots plus the CA (tunnelled hosts keep working).
    env.update(
        NODE_EXTRA_CA_CERTS=ca_cert,
        SSL_CERT_FILE=bundle,
        REQUESTS_CA_BUNDLE=bundle,
        CURL_CA_BUNDLE=bundle,
        CODEX_CA_CERTIFICATE=bundle,
        NODE_USE_ENV_PROXY="1",
    )
    return env


def without_forward_vars(environ: Mapping[str, str]) -> dict[str, str]:
    """The environment without any proxy or trust setting the parent had."""
    drop = {v.upper() for v in (*PROXY_VARS, *TRUST_VARS)}
    return {k: v for k, v in environ.items() if k.upper() not in drop}
