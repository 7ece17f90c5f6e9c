"""WebFetch(domain:...) rules: by the host of every URL a fetch tool was given."""

from __future__ import annotations

import pytest

from gate.rules.model import Effect, Kind
from rule_kit import ROOT, call, one_rule


@pytest.mark.parametrize(
    ("domain", "url", "hit"),
    [
        ("example.com", "https://example.com/x", True),
        ("example.com", "http://example.com", True),
        ("example.com", "https://EXAMPLE.com/x", True),  # case-insensitive
        ("Example.COM", "https://example.com/x", True),
        ("example.com.", "https://example.com/x", True),  # a trailing dot is ignored
        ("example.com", "https://example.com./x", True),
        ("example.com", "http://user:pw@example.com:8443/x?q=1", True),
        ("example.com", "example.com/docs", True),  # no scheme
        ("example.com", "https://api.example.com/x", False),  # not its subdomains
        ("example.com", "https://notexample.com/x", False),
        ("example.com", "https://example.com.evil.net/x", False),
        ("example.com", "https://evil.net/?u=https%3A%2F%2Fexample.com", False),
        ("*.example.com", "https://api.example.com/x", True),
        ("*.example.com", "https://a.b.c.example.com/x", True),  # any depth
        ("*.example.com", "https://example.com/x", False),  # not the apex
        ("*.example.com", "https://badexample.com/x", False),
        ("*.EXAMPLE.com", "https://API.example.COM/x", True),
        ("api.*.example.com", "https://api.eu.example.com/x", True),
        ("api.*.example.com", "https://api.a.b.example.com/x", False),  # one label only
        ("api-*.example.com", "https://api-eu.example.com/x", True),
        ("*", "https://anything.test/x", True),
    ],
)
def test_domain_patterns(domain: str, url: str, hit: bool) -> None:
    policy = one_rule(Effect.DENY, f"WebFetch(domain:{domain})")
    assert (policy.decide(call("WebFetch", url=url), ROOT).effect is Effect.DENY) is hit


@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("WebFetch", {"url": "https://docs.example.com/a"}),
        ("webfetch", {"url": "https://docs.example.com/a"}),  # OpenCode
        ("web_fetch", {"prompt": "Summarise https://docs.example.com/a and https://ok.org/"}),
    ],
)
def test_every_agents_fetch_tool_is_covered(tool: str, tool_input: dict[str, str]) -> None:
    policy = one_rule(Effect.DENY, "WebFetch(domain:*.example.com)")
    assert policy.decide(call(tool, **tool_input), ROOT).effect is Effect.DENY


def test_allow_needs_every_host() -> None:
    policy = one_rule(Effect.ALLOW, "WebFetch(domain:example.com)")
    one = call("web_fetch", prompt="Read https://example.com/a")
    two = call("web_fetch", prompt="Read https://example.com/a and https://evil.net/b")
    assert policy.decide(one, ROOT).effect is Effect.ALLOW
    assert policy.decide(two, ROOT).effect is None


def test_bare_webfetch_covers_every_fetch() -> None:
    policy = one_rule(Effect.ASK, "WebFetch")
    assert policy.decide(call("webfetch", url="https://x.test"), ROOT).effect is Effect.ASK


def test_a_webfetch_rule_does_not_cover_curl() -> None:
    # As in Claude Code: WebFetch rules are about the fetch tool. Write Bash(curl *) too.
    policy = one_rule(Effect.DENY, "WebFetch(domain:example.com)")
    assert policy.decide(call("Bash", command="curl https://example.com"), ROOT).effect is None


@pytest.mark.parametrize(
    ("rule", "kind", "enforced"),
    [
        ("WebFetch(domain:example.com)", Kind.DOMAIN, True),
        ("WebFetch", Kind.DOMAIN, True),
        ("WebFetch(https://example.com/*)", Kind.UNENFORCED, False),
    ],
)
def test_webfetch_rule_kinds(rule: str, kind: Kind, enforced: bool) -> None:
    (loaded,) = one_rule(Effect.DENY, rule).rules
    assert loaded.kind is kind
    assert (loaded.unenforced is None) is enforced
    if not enforced:
        assert "domain:" in str(loaded.unenforced)
