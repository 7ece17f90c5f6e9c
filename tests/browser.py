"""A real headless browser for tests of gate's web pages: Debian's chromium, driven by
Playwright (its own browser downloads are never used).

On a machine without chromium, running as root with apt-get (CI's clean machine), the
browser is installed on first use; elsewhere the browser tests are skipped, except under
CI=true, where a missing browser fails the run instead of hiding the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> Path:
    """The browser binary, installed with apt-get where that is possible."""
    if CHROMIUM.exists():
        return CHROMIUM
    if os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        subprocess.run(
            ["apt-get", "update", "-qq"], env=env, check=False, capture_output=True, timeout=300
        )
        done = subprocess.run(
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if done.returncode == 0 and CHROMIUM.exists():
            return CHROMIUM
        reason = f"apt-get install chromium failed: {done.stderr.strip()[-300:]}"
    else:
        reason = f"{CHROMIUM} is missing (install Debian's chromium package)"
    if os.environ.get("CI"):
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture
def browser() -> Iterator[object]:
    """A headless chromium (a playwright Browser); each test opens its own pages.

    One per test, not per session: Playwright's sync API keeps an event loop in the main
    thread while it runs, which makes a later test's `asyncio.run()` fail."""
    path = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(path), headless=True, args=ARGS)
        yield b
        b.close()
