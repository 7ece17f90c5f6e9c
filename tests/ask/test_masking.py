"""What a person is shown of a finding: previews and context never hold the value."""

from __future__ import annotations

import pytest

from gate.screen.masking import LINE_CHARS, context, masked, preview


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("ghp_abcdefghijklmnopqrstuvwxyz1234", "ghp_••••••••••••1234"),
        ("abcdefghijkl", "abcd••••ijkl"),
        ("abcdefghijk", "••••••••"),  # too short to show any of it
        ("abc", "•••"),
    ],
)
def test_preview_keeps_at_most_four_characters_at_each_end(value: str, shown: str) -> None:
    assert preview(value) == shown


def test_masked_text_says_where_each_preview_sits() -> None:
    a, b = "ghp_" + "x" * 36, "sk_live_" + "y" * 24
    text = f"one\nA={a} B={b}\ntwo\nthree"
    view, spans = masked(
        text, [(text.index(a), text.index(a) + len(a)), (text.index(b), text.index(b) + len(b))]
    )
    assert [view[s:e] for s, e in spans] == [preview(a), preview(b)]
    assert a not in view and b not in view
    assert context(view, *spans[1]) == f"one\nA={preview(a)} B={preview(b)}\ntwo"


def test_a_long_line_is_cut_around_the_finding() -> None:
    view = "x" * 5000 + "ghp_••••1234" + "y" * 5000
    shown = context(view, 5000, 5012)
    assert "ghp_••••1234" in shown and len(shown) <= LINE_CHARS + 2
