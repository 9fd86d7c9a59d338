"""Regenerate the report screenshots in docs/screenshots/: the first screen of the HTML report of the main job, and
the drill-down of one episode (reached by clicking a heatmap cell, then the first episode it lists).

    .venv/bin/python -m bench.report_screenshots            # runs the main job in a temporary folder (~30 s)
    .venv/bin/python -m bench.report_screenshots --run DIR  # or uses a run folder that has report.html

Needs Chromium (apt-get install -y chromium) and Playwright for Python (pip install -e '.[browser]').
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.browser import chromium, missing, open_first_episode, open_report

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "screenshots"
MAIN_JOB = ["run", "scenarios/", "--transport", "memory", "--no-progress", "--call-timeout", "0.3",
            "--concurrency", "8"]  # fmt: skip
CELL = '#recovery-matrix a[href="#episodes?agent=naive&hazards_fired=transient_error"]'


def main_job(out: Path) -> None:
    command = [str(Path(sys.executable).with_name("mcp-hazard")), *MAIN_JOB, "--out", str(out)]
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)


def shoot(run: Path) -> list[Path]:
    first, drill = OUT / "report-first-screen.png", OUT / "report-drill-down.png"
    OUT.mkdir(parents=True, exist_ok=True)
    with chromium() as browser:
        page, problems = open_report(browser, run / "report.html")
        page.screenshot(path=str(first))
        open_first_episode(page, CELL)
        page.evaluate("document.getElementById('episode').scrollIntoView()")
        page.screenshot(path=str(drill))
        if problems.messages:
            raise SystemExit(f"the page reported problems: {problems.messages}")
    return [first, drill]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", type=Path, help="a run folder with report.html (default: run the main job)")
    args = parser.parse_args()
    why = missing()
    if why is not None:
        raise SystemExit(f"cannot take screenshots: {why}")
    if args.run is not None:
        written = shoot(args.run)
    else:
        with tempfile.TemporaryDirectory(prefix="mcp-hazard-shots-") as scratch:
            main_job(Path(scratch) / "run")
            written = shoot(Path(scratch) / "run")
    for path in written:
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
