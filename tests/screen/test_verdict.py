"""A Withheld is tagged by what was withheld, made by its kind's constructor; the audit
records it as it always did."""

from __future__ import annotations

import pytest

from gate.ask.questions import finding, finding_kind
from gate.screen.verdict import Asked, Withheld, Withholding

ASKED = Asked(key="k" * 64, question="send-secret", preview="ghp_…abcd", context="x")


def test_each_kind_is_recorded_as_before() -> None:
    result = Withheld.tool_result(
        call_id="c1", tool="Read", target="/p/.env", rule="Read(./.env)", where="r.yaml:3"
    )
    content = Withheld.denied_content(
        path="/p/.env", rule="Read(./.env)", where="r.yaml:3", count=2
    )
    secret = Withheld.secret(
        detector="github-token", rule_id="github-pat", where="tier high: ask", fingerprint="ab" * 8
    )
    assert result.record() == {
        "kind": "tool-result",
        "call_id": "c1",
        "tool": "Read",
        "target": "/p/.env",
        "rule": "Read(./.env)",
        "where": "r.yaml:3",
        "count": 1,
    }
    assert content.record() == {
        "kind": "content",
        "call_id": None,
        "tool": None,
        "target": "/p/.env",
        "rule": "Read(./.env)",
        "where": "r.yaml:3",
        "count": 2,
    }
    assert secret.record() == {
        "kind": "secret",
        "call_id": None,
        "tool": None,
        "target": "github-token",
        "rule": "github-pat",
        "where": "tier high: ask",
        "count": 1,
        "fingerprint": "ab" * 8,
    }
    assert all(type(w.record()["kind"]) is str for w in (result, content, secret))


def test_what_a_field_means_follows_from_the_tag() -> None:
    secret = Withheld.secret(
        detector="github-token",
        rule_id="github-pat",
        where="tier high: ask",
        fingerprint="ab" * 8,
        asked=ASKED,
    )
    content = Withheld.denied_content(path="/p/.env", rule="Read(./.env)", where="r.yaml:3")
    assert (secret.kind, secret.detector, secret.file) == (
        Withholding.SECRET,
        "github-token",
        None,
    )
    assert (content.kind, content.detector, content.file) == (Withholding.CONTENT, None, "/p/.env")
    # A person is never shown a detector kind as a file, nor a file as a detector kind.
    assert finding(secret)["file"] is None and finding_kind(secret) == "github-token"
    asked = Withheld.tool_result(
        call_id="c1", tool="Bash", target="notes.txt", rule="Bash(cat *)", where="r.yaml:1"
    )
    assert finding_kind(asked) == "tool-result"


def test_a_withheld_is_built_by_keyword_only() -> None:
    with pytest.raises(TypeError):
        Withheld("c1", "Read", "/p/.env", "Read(./.env)", "r.yaml:3")  # type: ignore[misc]
