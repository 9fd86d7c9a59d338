"""The HTML report in a real browser: headless Chromium renders it offline to a PNG of the expected size.

Needs the `chromium` binary (Debian package `chromium`). Without it the test skips, locally and in CI alike: whether
CI installs a browser is decided in .ci/run, not here.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from mcp_hazard.scoring.report import render

from .test_report_support import png_facts, read_html, report_of, write_traces

WIDTH, HEIGHT = 1280, 2000
TIMEOUT = 90


def chromium() -> str:
    found = shutil.which("chromium")
    if found is None:
        where = "CI (CI=true)" if os.environ.get("CI", "").lower() in ("1", "true", "yes") else "this machine"
        pytest.skip(f"chromium is not installed on {where}; `apt-get install -y chromium` enables this screenshot test")
    return found


def screenshot(browser: str, page: Path, out: Path, profile: Path) -> subprocess.CompletedProcess[bytes]:
    command = [
        browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
        f"--user-data-dir={profile}", f"--screenshot={out}", f"--window-size={WIDTH},{HEIGHT}", page.as_uri(),
    ]  # fmt: skip
    # its own process group, so a hung browser and all its helper processes can be stopped together
    process = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)  # fmt: skip
    try:
        stdout, stderr = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.communicate()
        pytest.fail(f"chromium did not finish the screenshot within {TIMEOUT}s", pytrace=False)
    return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)


def test_html_report_renders_in_headless_chromium(tmp_path: Path) -> None:
    browser = chromium()
    traces = write_traces(tmp_path / "traces", files=("travel.yaml",))
    page = tmp_path / "report.html"
    page.write_text(render(report_of(traces), "html"), encoding="utf-8")
    assert read_html(page.read_text(encoding="utf-8")).errors == []
    out = tmp_path / "shot.png"
    done = screenshot(browser, page, out, tmp_path / "profile")
    assert out.is_file(), f"no screenshot (exit {done.returncode}): {done.stderr.decode(errors='replace')[-2000:]}"
    data = out.read_bytes()
    assert len(data) > 10_000, f"screenshot is only {len(data)} bytes"
    facts = png_facts(data)
    assert (facts["width"], facts["height"]) == (WIDTH, HEIGHT)
    assert facts["complete"]
    assert facts["busy"] > 0.005, f"the page looks blank ({facts['busy']:.4f} of the image is not background)"
