"""`gate history scan --html`: one self-contained page, checked in headless chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from history.builders import every_agent
from history.kit import invoke


def test_the_page_charts_what_was_found(
    browser: Any, tmp_path: Path, gate_dirs: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    p, _ = every_agent(tmp_path / "user")
    monkeypatch.chdir(p.project)
    # A session title an agent chose is text on the page, never markup.
    sid_dir = p.home / ".copilot" / "session-state" / "14be5ef5-cc33-4e5c-82d8-019a84a3b766"
    (sid_dir / "workspace.yaml").write_text(
        f"cwd: {p.project}\nname: <img src=x onerror=alert(1)><script>alert(2)</script>\n"
    )
    page_file = tmp_path / "history.html"
    code, _, err = invoke(
        "history", "scan", "--home", str(p.home), "--html", str(page_file), "--json"
    )
    assert code == 1, err
    html = page_file.read_text()
    assert page_file.stat().st_mode & 0o777 == 0o600
    assert p.token not in html and p.denied not in html
    assert "<script>" not in html and "<img src=x" not in html
    requests: list[str] = []
    errors: list[str] = []
    page = browser.new_page()
    page.on("request", lambda r: requests.append(r.url))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.route(
        "**/*",
        lambda route: (
            route.continue_() if route.request.url == page_file.as_uri() else route.abort()
        ),
    )
    page.goto(page_file.as_uri())
    try:
        assert requests == [page_file.as_uri()] and errors == []
        agents = page.eval_on_selector_all(
            "#chart-agents .bar", "els => els.map(e => e.dataset.label)"
        )
        assert sorted(agents) == sorted(
            [
                "claude-code",
                "codex",
                "cursor",
                "opencode",
                "copilot",
                "hermes",
                "gemini-cli",
                "aider",
            ]
        )
        counts = page.eval_on_selector_all(
            "#chart-agents .bar", "els => els.map(e => +e.dataset.value)"
        )
        copies = page.eval_on_selector_all("#copies tbody tr", "els => els.length")
        assert sum(counts) == copies > 0
        kinds = page.eval_on_selector_all(
            "#chart-kinds .bar", "els => els.map(e => e.dataset.label)"
        )
        assert "github-token" in kinds
        days = page.eval_on_selector_all("#chart-days .bar", "els => els.map(e => e.dataset.label)")
        assert "2026-11-20" in days and days == sorted(days)
        rows = page.eval_on_selector_all("#secrets tbody tr", "els => els.length")
        assert rows == 2
        assert page.locator("text=<script>alert(2)</script>").count() >= 1
        visible = page.inner_text("body")
        assert p.token not in visible and p.denied not in visible
    finally:
        page.close()
