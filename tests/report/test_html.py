"""`gate report --html`: one self-contained page, checked in Debian's headless chromium."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gate.audit.charts import LABEL_CHARS
from gate.cli import cli
from report.audit_rows import IMG_MODEL, SCRIPT_MODEL, Audit, local_day, noon

SHOTS = os.environ.get("GATE_TEST_SCREENSHOTS")  # a dir to keep screenshots in, if set


def write_report(path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["report", "--html", str(path), *args])
    assert result.exit_code == 0, result.stderr
    assert result.stderr == f"HTML report written to {path}\n"
    return result.stdout


class Page:
    """A page that records every request it makes and every console error."""

    def __init__(self, browser: Any, path: Path):
        self.requests: list[str] = []
        self.errors: list[str] = []
        self.page = browser.new_page(viewport={"width": 1100, "height": 900})
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        # Anything but the report itself is refused (and recorded above).
        self.page.route(
            "**/*",
            lambda route: (
                route.continue_() if route.request.url == path.as_uri() else route.abort()
            ),
        )
        self.page.goto(path.as_uri())

    def values(self, selector: str) -> list[int]:
        return [
            int(v)
            for v in self.page.eval_on_selector_all(
                selector, "els => els.map(e => e.getAttribute('data-value'))"
            )
        ]

    def labels(self, selector: str) -> list[str]:
        return list(
            self.page.eval_on_selector_all(
                selector, "els => els.map(e => e.getAttribute('data-label'))"
            )
        )

    def texts(self, selector: str) -> list[str]:
        """What SVG text elements show (their own text, not their <title> tooltip)."""
        return list(
            self.page.eval_on_selector_all(
                selector,
                """els => els.map(e =>
            [...e.childNodes].filter(n => n.nodeType === 3).map(n => n.data).join(''))""",
            )
        )


@pytest.fixture
def page(browser: Any, audit: Audit, tmp_path: Path) -> Iterator[Page]:
    path = tmp_path / "report.html"
    assert "Per model" in write_report(path, "--since", "30d")
    assert path.stat().st_mode & 0o777 == 0o600
    p = Page(browser, path)
    yield p
    p.page.close()


def test_charts_match_the_data(page: Page, audit: Audit) -> None:
    p = page.page
    days = [local_day(noon(n)) for n in range(5, 0, -1)] + [local_day(audit.now)]
    assert page.labels("#chart-bytes rect.bar") == days  # quiet days are on the axis too
    assert page.values("#chart-bytes rect.bar") == [3000, 0, 0, 11000, 0, audit.gate_sent]
    heights = [
        b["height"]
        for b in (p.locator("#chart-bytes rect.bar").nth(i).bounding_box() or {} for i in range(6))
    ]
    assert heights[1] == heights[2] == 0 and heights[3] > heights[0] > heights[5] > 0
    assert abs(heights[0] / heights[3] - 3000 / 11000) < 0.02  # drawn to scale
    assert page.texts("#chart-bytes text.xlabel") == [d[5:] for d in days]
    assert page.values("#chart-tokens circle.point[data-series='input tokens']") == [
        400,
        0,
        0,
        2500,
        0,
        42,
    ]
    assert page.values("#chart-tokens circle.point[data-series='output tokens']") == [
        50,
        0,
        0,
        500,
        0,
        14,
    ]
    assert dict(
        zip(
            page.labels("#chart-agents rect.bar"),
            page.values("#chart-agents rect.bar"),
            strict=True,
        )
    ) == {"(none)": 3, "codex": 2, "opencode": 2}
    assert page.texts("#chart-agents text.rlabel") == ["(none)", "codex", "opencode"]
    assert sorted(page.labels("#chart-hosts rect.bar")) == [
        "127.0.0.1",
        "api.openai.com",
        "generativelanguage.googleapis.com",
    ]
    assert len(page.values("#chart-models rect.bar")) == 4  # the blocked row has its model
    assert dict(
        zip(
            page.labels("#chart-withheld rect.bar"),
            page.values("#chart-withheld rect.bar"),
            strict=True,
        )
    ) == {"secret": 1, "tool-result": 2}  # the secret a remembered answer approved was sent
    cards = dict(reversed(c.split("\n", 1)) for c in p.locator("ul.cards li").all_inner_texts())
    assert cards["items withheld"] == "3" and cards["approved and sent"] == "1"
    for svg in p.locator("svg.chart").all():  # every chart has an accessible name
        title = svg.locator("title").first.text_content()
        assert svg.get_attribute("role") == "img" and title


def test_no_network_no_errors_and_the_tables(page: Page) -> None:
    assert page.requests == [page.page.url] and page.errors == []
    text = page.page.inner_text("body")
    for title in (
        "Per day",
        "Per model",
        "Withheld and redacted, by kind and rule",
        "Blocked requests, by reason",
        "Questions asked and answers",
    ):
        assert title in text
    cells = page.page.locator("table").nth(4).locator("tbody tr").first.locator("td")
    assert cells.all_inner_texts() == ["tool-result", "Read(./.env)", "2", "2", "2", "0"]


def test_agent_chosen_strings_show_as_text_and_never_run(page: Page) -> None:
    p = page.page
    assert p.evaluate("window.__pwned") is None
    assert p.locator("script").count() == 0 and p.locator("img").count() == 0
    assert p.locator("table b").count() == 0  # a blocked reason's <b> tag is text too
    text = p.inner_text("body")
    assert SCRIPT_MODEL in text and IMG_MODEL in text and "body is not JSON <b>bold</b>" in text
    assert {SCRIPT_MODEL, IMG_MODEL} <= set(page.labels("#chart-models rect.bar"))
    cut = SCRIPT_MODEL[: LABEL_CHARS - 1] + "…"  # long labels are cut; <title> has it all
    assert cut in page.texts("#chart-models text.rlabel")
    assert page.requests == [p.url]  # the <img src=x> never loaded


def test_screenshot(page: Page, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    page.page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 20_000  # a rendered page, not a blank one
    if SHOTS:
        shutil.copy(shot, Path(SHOTS) / "report.png")


def test_json_and_html_together(audit: Audit, tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    path = tmp_path / "out" / "r.html"
    out = write_report(path, "--json")
    assert json.loads(out)["totals"]["requests"] == 8  # stdout is exactly one object
    path.chmod(0o644)
    write_report(path, "--since", "1h")  # replaced whole, owner-only again
    assert path.stat().st_mode & 0o777 == 0o600 and "claude-old" not in path.read_text()
    assert [p.name for p in path.parent.iterdir()] == ["r.html"]  # no temp file left


def test_bad_html_targets(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["report", "--html", str(tmp_path / "no" / "r.html")])
    assert result.exit_code == 1 and f"no such directory: {tmp_path / 'no'}" in result.stderr
    result = CliRunner().invoke(cli, ["report", "--html", str(tmp_path)])
    assert result.exit_code == 2 and "is a directory" in result.stderr


def test_an_empty_report_page(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "empty.html"
    write_report(path)
    p = Page(browser, path)
    assert "no requests recorded yet" in p.page.inner_text("body")
    assert p.page.locator("svg").count() == 0 and p.errors == []
    p.page.close()
