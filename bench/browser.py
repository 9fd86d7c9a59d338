"""Open HTML reports in headless Chromium through Playwright: shared by the report benchmark, the screenshot script
and the browser test (tests/e2e/test_report_browser.py).

Chromium is Debian's package (`apt-get install -y chromium`), never a browser Playwright downloads; Playwright for
Python is the `browser` extra (also in `test`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
VIEWPORT = {"width": 1280, "height": 900}


def chromium_path() -> str | None:
    """The Debian Chromium binary, or None when it is not installed."""
    found = shutil.which("chromium")
    if found:
        return found
    return "/usr/bin/chromium" if Path("/usr/bin/chromium").is_file() else None


def missing() -> str | None:
    """Why a browser cannot be driven here, or None when it can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed (pip install -e '.[browser]')"
    if chromium_path() is None:
        return "chromium is not installed (apt-get install -y chromium)"
    return None


@dataclass
class Problems:
    """What went wrong in a page: console errors and uncaught exceptions, as text."""

    messages: list[str] = field(default_factory=list)

    def watch(self, page: Any) -> None:
        page.on("console", lambda message: self.messages.append(message.text) if message.type == "error" else None)
        page.on("pageerror", lambda error: self.messages.append(f"uncaught: {error}"))


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium browser (Playwright `Browser`), closed at the end."""
    from playwright.sync_api import sync_playwright

    path = chromium_path()
    assert path is not None, missing()
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def open_report(browser: Any, report: Path, viewport: dict[str, int] | None = None) -> tuple[Any, Problems]:
    """A new page showing `report` (loaded: the `load` event fired), and the problems it reports from then on."""
    page = browser.new_page(viewport=viewport or VIEWPORT)
    problems = Problems()
    problems.watch(page)
    page.goto(report.resolve().as_uri(), wait_until="load")
    return page, problems


def open_first_episode(page: Any, cell_selector: str) -> None:
    """Click a heatmap cell, wait for its episode list, click its first episode, wait for the drill-down."""
    page.locator(cell_selector).first.click()
    page.wait_for_selector("#episode-list tbody tr a")
    page.locator("#episode-list tbody tr a").first.click()
    page.wait_for_selector("#episode table.timeline")
