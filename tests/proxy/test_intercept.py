"""Forward mode's host table and egress settings: what is decrypted, where it goes, and
config.yaml's `egress:` errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gate.config import Config, EgressDefault, load, parse_upstream
from gate.errors import ConfigError
from gate.proxy.intercept import Intercepts


def _intercepts(**extra: str) -> Intercepts:
    config = Config().with_upstreams({n: parse_upstream(n, u) for n, u in extra.items()})
    return Intercepts(config.upstreams)


@pytest.mark.parametrize(
    ("host", "path", "name", "rest"),
    [
        ("api.anthropic.com", "/v1/messages", "anthropic", "/v1/messages"),
        ("API.Anthropic.COM.", "/v1/messages", "anthropic", "/v1/messages"),
        ("api.openai.com", "/v1/responses", "openai", "/v1/responses"),
        ("chatgpt.com", "/backend-api/codex/responses", "chatgpt", "/responses"),
        (
            "generativelanguage.googleapis.com",
            "/v1beta/models/g:generateContent",
            "gemini",
            "/v1beta/models/g:generateContent",
        ),
        (
            "cloudcode-pa.googleapis.com",
            "/v1internal:generateContent",
            "code-assist",
            "/v1internal:generateContent",
        ),
        (
            "us-central1-aiplatform.googleapis.com",
            "/v1/projects/p/x:rawPredict",
            "vertex",
            "/v1/projects/p/x:rawPredict",
        ),
        (
            "bedrock-runtime.eu-west-1.amazonaws.com",
            "/model/m/invoke",
            "bedrock",
            "/model/m/invoke",
        ),
        (
            "api.individual.githubcopilot.com",
            "/chat/completions",
            "github-copilot",
            "/chat/completions",
        ),
        ("api.githubcopilot.com", "/responses", "github-copilot", "/responses"),
    ],
)
def test_model_hosts_are_decrypted_and_routed(host: str, path: str, name: str, rest: str) -> None:
    table = _intercepts()
    assert table.decrypts(host)
    assert any(re.search(p, f"{host}:443", re.I) for p in table.allow_patterns())
    route = table.route(host, 443, path)
    assert route is not None and (route.upstream.name, route.path) == (name, rest)


@pytest.mark.parametrize(
    "host",
    [
        "api.anthropic.com.evil.test",
        "evilapi.anthropic.com",
        "anthropic.com",
        "chatgpt.com.evil",
        "aiplatform.googleapis.com.evil",
        "bedrock-runtime.amazonaws.com.evil",
        "githubcopilot.com",
        "example.com",
        "statsig.anthropic.com",
    ],
)
def test_look_alike_hosts_are_not_model_hosts(host: str) -> None:
    table = _intercepts()
    assert not table.decrypts(host)
    assert not any(re.search(p, f"{host}:443", re.I) for p in table.allow_patterns())
    assert table.route(host, 443, "/v1/messages") is None


def test_chatgpt_outside_the_codex_api_is_not_model_traffic() -> None:
    table = _intercepts()
    assert table.route("chatgpt.com", 443, "/backend-api/codexfoo/responses") is None
    assert table.route("chatgpt.com", 443, "/backend-api/accounts") is None


def test_upstream_override_decides_where_a_model_host_goes() -> None:
    table = _intercepts(anthropic="http://127.0.0.1:9999", vertex="http://127.0.0.1:9998/v")
    route = table.route("api.anthropic.com", 443, "/v1/messages")
    assert route is not None and route.upstream.url == "http://127.0.0.1:9999"
    vertex = table.route("europe-west4-aiplatform.googleapis.com", 443, "/v1/x:rawPredict")
    assert vertex is not None and vertex.upstream.url == "http://127.0.0.1:9998/v"
    # Not overridden: a regional host goes to the very host the agent named.
    bedrock = table.route("bedrock-runtime.us-east-1.amazonaws.com", 443, "/model/m/invoke")
    assert bedrock is not None
    assert bedrock.upstream.url == "https://bedrock-runtime.us-east-1.amazonaws.com"


def test_a_configured_gateway_host_is_a_model_host() -> None:
    table = _intercepts(work="https://llm.corp.example/api", fake="http://127.0.0.1:5")
    assert table.decrypts("llm.corp.example") and not table.decrypts("127.0.0.1")
    route = table.route("llm.corp.example", 443, "/api/v1/messages")
    assert route is not None and (route.upstream.name, route.path) == ("work", "/v1/messages")
    assert table.route("llm.corp.example", 443, "/other") is None


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("egress: {default: open}", "egress.default"),
        ("egress: {allow: example.com}", "egress.allow"),
        ("egress: {allow: ['https://example.com']}", "egress.allow[0]"),
        ("egress: {allow: ['example.com:443']}", "egress.allow[0]"),
        ("egress: {allow: [ok.example, 'a/b']}", "egress.allow[1]"),
        ("egress: {deny: [x]}", "egress.deny"),
        ("egress: block", "egress"),
    ],
)
def test_bad_egress_config_names_the_field(text: str, where: str, tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as err:
        load(path)
    assert f"{path}:1: {where}" in err.value.diagnostics()  # with its line


def test_egress_config_loads(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("egress:\n  default: block\n  allow: [registry.npmjs.org, '*.github.com']\n")
    egress = load(path).egress
    assert egress.default is EgressDefault.BLOCK
    assert egress.allows("registry.npmjs.org") and egress.allows("api.github.com")
    assert not egress.allows("github.com.evil.test") and not egress.allows("evilgithub.com")
    assert not egress.allows("npmjs.org")
    assert load(tmp_path / "missing.yaml").egress.allows("anything.example")


def test_an_upstream_named_as_a_host_takes_that_whole_host() -> None:
    table = _intercepts(**{"oauth2.googleapis.com": "http://127.0.0.1:7/"})
    assert table.decrypts("oauth2.googleapis.com") and not table.decrypts("googleapis.com")
    assert table.route("oauth2.googleapis.com", 443, "/token") is None  # not model traffic
    origin = table.origin("OAUTH2.googleapis.com.")
    assert origin is not None and origin.url == "http://127.0.0.1:7"
    assert table.origin("www.googleapis.com") is None
    assert table.origin("api.anthropic.com") is None  # its upstream is the host itself
