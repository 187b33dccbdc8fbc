"""A real headless browser for the tests that check what a researcher sees (the report page, MLflow's runs view).

Playwright drives a Chromium: Debian's `chromium` package (or env REM_BROWSER, any Chromium binary), else the browser
Playwright installed itself. Where neither exists the test skips in one line; with REM_REQUIRE_BROWSER=1 (CI, which
installs Debian's package) it fails instead, so CI can never pass without having looked.
"""

from __future__ import annotations

import os
import shutil
from contextlib import contextmanager

import pytest

REQUIRE = "REM_REQUIRE_BROWSER"
CANDIDATES = ("chromium", "chromium-headless-shell", "chromium-browser", "google-chrome")


def no_browser(message: str):
    if os.environ.get(REQUIRE, "") not in ("", "0"):
        pytest.fail(f"{message} ({REQUIRE} is set: the browser tests must run here)", pytrace=False)
    pytest.skip(message)


def chromium_binary() -> str | None:
    """env REM_BROWSER, else the first Chromium on PATH; None: let Playwright use its own download, if any."""
    if os.environ.get("REM_BROWSER"):
        return os.environ["REM_BROWSER"]
    return next((found for name in CANDIDATES if (found := shutil.which(name))), None)


@contextmanager
def browser_page(width: int = 1600, height: int = 1000):
    """A fresh page of a headless Chromium, closed afterwards."""
    try:
        from playwright.sync_api import Error, sync_playwright
    except ImportError:
        no_browser("no browser: playwright is not installed (pip install -e '.[dev]')")
    with sync_playwright() as p:
        try:
            browser = p.chromium.launch(executable_path=chromium_binary(), args=["--no-sandbox"])
        except Error as err:
            no_browser(f"no browser: Chromium did not start ({str(err).splitlines()[0]}); apt-get install chromium")
        try:
            yield browser.new_page(viewport={"width": width, "height": height})
        finally:
            browser.close()


def screenshot(page, name: str) -> None:
    """Keep a full-page screenshot where env REM_SCREENSHOTS names a folder (what a reviewer looks at)."""
    folder = os.environ.get("REM_SCREENSHOTS")
    if folder:
        os.makedirs(folder, exist_ok=True)
        page.screenshot(path=os.path.join(folder, f"{name}.png"), full_page=True)
