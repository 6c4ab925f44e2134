"""Headless Chromium for the browser tests: Playwright driving Debian's /usr/bin/chromium (no browser
download). Skipped when either is missing, unless COMPSENSE_REQUIRE_BROWSER=1 (CI), where that fails."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

CHROMIUM = os.environ.get("COMPSENSE_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def require_browser() -> str:
    """The Chromium executable, after checking that it and Playwright are there."""
    missing = []
    if not Path(CHROMIUM).exists():
        missing.append(f"chromium ({CHROMIUM}; apt-get install -y chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        missing.append("playwright (pip install -e '.[test]')")
    if missing:
        message = "browser test needs " + " and ".join(missing)
        if os.environ.get("COMPSENSE_REQUIRE_BROWSER") == "1":
            pytest.fail(message + " (COMPSENSE_REQUIRE_BROWSER=1)")
        pytest.skip(message)
    return CHROMIUM


@pytest.fixture(scope="module")
def chromium(require_browser):
    """A launched headless Chromium (Playwright Browser), closed after the module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_browser, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
