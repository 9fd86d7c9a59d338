"""How big the HTML report is and how fast it opens at scale, in headless Chromium (docs/performance.md, "HTML report
at 10,000 episodes").

    .venv/bin/python -m bench.report_load                         # ~10,000 episodes, generated, measured, removed
    .venv/bin/python -m bench.report_load --keep --dir /tmp/big    # keep the run folder, reuse it next time
    .venv/bin/python -m bench.report_load --seeds 0-4 --repeat 5   # a smaller run

The episodes come from the main job over the memory transport with many seeds (`mcp-hazard run scenarios/
--transport memory --seeds 0-41`: 238 episodes a seed). Measured in one browser, interleaved (a, b, a, b, ...), best
and median of `--repeat` loads:

- (a) baseline: the same report.html with the embedded episode data left out (tables, heatmaps, plots, script);
- (b) the report as written: time to the `load` event (the heatmaps are drawn: they are plain HTML);
- (c) in (b), a click on a heatmap cell until its episode list is drawn (the first click unpacks every episode);
- (d) then a click on an episode until its timeline is drawn.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.browser import chromium, missing, open_report

ROOT = Path(__file__).resolve().parents[1]
CELL = '#recovery-matrix a[href="#episodes?agent=naive&hazards_fired=transient_error"]'
DATA = re.compile(r'(<script type="application/octet-stream" id="episode-data"[^>]*>)[^<]*(</script>)')


def make_run(out: Path, seeds: str) -> float:
    command = [str(Path(sys.executable).with_name("mcp-hazard")), "run", "scenarios/", "--transport", "memory",
               "--seeds", seeds, "--call-timeout", "0.2", "--concurrency", "16", "--no-progress",
               "--out", str(out)]  # fmt: skip
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    return time.perf_counter() - started


def load_ms(browser: Any, page_path: Path) -> tuple[float, Any]:
    page, problems = open_report(browser, page_path)
    timing = page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd")
    if problems.messages:
        raise SystemExit(f"{page_path}: {problems.messages}")
    return float(timing), page


def click_ms(page: Any, selector: str, done: str) -> float:
    started = time.perf_counter()
    page.locator(selector).first.click()
    page.wait_for_selector(done)
    return (time.perf_counter() - started) * 1000


def measure(report: Path, repeat: int) -> dict[str, list[float]]:
    baseline = report.with_name("report-baseline.html")
    baseline.write_text(DATA.sub(r"\1\2", report.read_text(encoding="utf-8")), encoding="utf-8")
    found: dict[str, list[float]] = {"a": [], "b": [], "c": [], "d": []}
    with chromium() as browser:
        for _ in range(repeat):
            ms, page = load_ms(browser, baseline)
            found["a"].append(ms)
            page.close()
            ms, page = load_ms(browser, report)
            found["b"].append(ms)
            found["c"].append(click_ms(page, CELL, "#episode-list tbody tr"))
            found["d"].append(click_ms(page, "#episode-list tbody tr a", "#episode table.timeline"))
            page.close()
    baseline.unlink()
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", default="0-41", help="seeds of the main job (default 0-41: 9,996 episodes)")
    parser.add_argument("--dir", type=Path, help="run folder to make or reuse")
    parser.add_argument("--keep", action="store_true", help="keep the run folder")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    why = missing()
    if why is not None:
        raise SystemExit(f"cannot measure: {why}")
    folder = args.dir or Path(tempfile.mkdtemp(prefix="mcp-hazard-report-load-"))
    try:
        report = folder / "report.html"
        if not report.is_file():
            print(f"running the main job with seeds {args.seeds} into {folder} ...", flush=True)
            print(f"  took {make_run(folder, args.seeds):.0f} s")
        text = report.read_text(encoding="utf-8")
        episodes = re.search(r"<title>mcp-hazard report \((\d+) episodes\)</title>", text)
        data = DATA.search(text)
        size, data_size = report.stat().st_size, len(data.group(0)) if data else 0
        json_size = (folder / "report.json").stat().st_size
        print(f"episodes: {episodes.group(1) if episodes else '?'}")
        print(f"report.html: {size / 1e6:.2f} MB, of which embedded episodes {data_size / 1e6:.2f} MB "
              f"(report.json: {json_size / 1e6:.2f} MB)")  # fmt: skip
        found = measure(report, args.repeat)
        names = {"a": "(a) load, without episode data", "b": "(b) load, the report", "c": "(c) cell -> episode list",
                 "d": "(d) episode -> timeline"}  # fmt: skip
        for key, values in found.items():
            print(f"{names[key]:34s} best {min(values):7.0f} ms   median {statistics.median(values):7.0f} ms")
        print(f"ratio (b)/(a), best: {min(found['b']) / min(found['a']):.2f}")
    finally:
        if not args.keep and args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
