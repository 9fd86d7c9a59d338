"""The HTML report in a real browser (Debian's Chromium driven by Playwright), as a user meets it: made by
`mcp-hazard run` (through main() in this process: the report is the subject), opened from disk, offline. It loads
without console errors, its heatmaps are coloured cells, a heatmap cell lists the episodes behind it, and an episode
opens its verdict, the expected answer, the agent's notes, hazards and timeline; a value cut in the timeline opens
whole on a click, and a four-digit `ms` stays on one line. A stranger's agent name and answer that hold HTML are
shown as text, and none of their script runs.

Needs the `chromium` binary and Playwright for Python (both installed by .ci/run); without them it skips, saying
which is missing.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from conftest import run_main

from bench.browser import chromium, missing, open_report
from tests.e2e.support import ROOT
from tests.runner.support import once_per_session
from tests.scoring.test_report_support import embedded_episodes, png_facts

pytestmark = pytest.mark.e2e

RUN = ["run", "scenarios/travel.yaml", "--hazard", "all", "--intervention", "rename", "--transport", "memory",
       "--call-timeout", "0.3", "--concurrency", "8", "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    why = missing()
    if why is not None:
        pytest.skip(f"no browser to drive: {why}")

    def build(folder: Path) -> Path:
        out = folder / "run"
        done = run_main(*RUN, "--out", str(out), cwd=ROOT)
        assert done.returncode == 0, done.stderr
        assert f"Full report: {out / 'report.html'}" in done.stdout
        return out

    return once_per_session(tmp_path_factory, "browser-run", build)  # three tests read it, from either worker


def report_of(run: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((run / "report.json").read_text(encoding="utf-8"))
    return report


def test_the_report_loads_clean_and_its_heatmaps_are_coloured(run: Path, tmp_path: Path) -> None:
    report = report_of(run)
    fired = sum(1 for row in report["recovery_by_agent"].values() for cell in row.values() if cell["fired"])
    scored = sum(1 for row in report["intervention_by_agent"].values() for c in row.values() if c["irs"] is not None)
    assert fired >= 10 and scored == 3  # naive, naive-positional (interventions add it), recovering: varied enough
    with chromium() as browser:
        page, problems = open_report(browser, run / "report.html")
        for table, expected in (("#recovery-matrix", fired), ("#irs-matrix", scored)):
            cells = page.locator(f"{table} td.heat-cell")
            assert cells.count() == expected, table
            colours = cells.evaluate_all("cells => cells.map(c => getComputedStyle(c).backgroundColor)")
            assert all(re.fullmatch(r"rgb\(\d+, \d+, \d+\)", c) and c != "rgb(255, 255, 255)" for c in colours)
        # the worst and the best recovery are far apart on the scale
        naive = page.locator('#recovery-matrix a[href="#episodes?agent=naive&hazards_fired=transient_error"]')
        best = page.locator('#recovery-matrix a[href="#episodes?agent=recovering&hazards_fired=transient_error"]')
        red = naive.evaluate("a => getComputedStyle(a.parentElement).backgroundColor")
        blue = best.evaluate("a => getComputedStyle(a.parentElement).backgroundColor")
        assert (red, blue) == ("rgb(178, 24, 43)", "rgb(33, 102, 172)")
        shot = tmp_path / "first-screen.png"
        page.screenshot(path=str(shot))
        facts = png_facts(shot.read_bytes())
        assert (facts["width"], facts["height"], facts["complete"]) == (1280, 900, True)
        assert facts["busy"] > 0.01, f"the first screen looks blank ({facts['busy']:.4f})"
        assert problems.messages == []


def test_a_heatmap_cell_opens_its_episodes_and_an_episode_its_timeline(run: Path) -> None:
    report = report_of(run)
    behind = [r for r in report["per_episode"] if r["agent"] == "naive" and "transient_error" in r["hazards_fired"]]
    assert behind
    with chromium() as browser:
        page, problems = open_report(browser, run / "report.html")
        page.locator('#recovery-matrix a[href="#episodes?agent=naive&hazards_fired=transient_error"]').click()
        page.wait_for_selector("#episode-list tbody tr")
        assert page.locator("#episode-list tbody tr").count() == len(behind)
        status = page.inner_text("#episode-filter")
        assert status.startswith(f"{len(behind)} of {report['episodes']} episodes: agent = naive, hazards fired")
        first = page.locator("#episode-list tbody tr a").first
        name = first.inner_text()
        first.click()
        page.wait_for_selector("#episode table.timeline")
        assert page.is_visible("#episode") and page.inner_text("#episode-title").startswith(name)
        facts = dict(row.split("\t", 1) for row in page.inner_text("#episode table.facts").splitlines() if "\t" in row)
        assert facts["verdict"].startswith("✗ ") and facts["agent outcome"] == "finished"
        assert facts["trace"] in {r["trace"] for r in behind}
        hazards = page.inner_text("#episode table.hazards")
        assert "transient_error" in hazards and "\tno\t" in hazards  # naive never recovers
        injected = page.locator("#episode table.timeline tr.hazard")
        assert injected.count() >= 1
        assert "transient_error fired on" in injected.first.inner_text()
        page.go_back()
        page.wait_for_selector("#episode", state="hidden")
        assert page.locator("#episode-list tbody tr").count() == len(behind)
        assert problems.messages == []


def _long_value(rows: list[dict[str, Any]]) -> tuple[int, str]:
    """(episode index, value) of the first value an agent was shown that the timeline cuts (over 240 characters)."""
    for row in rows:
        for step in row["timeline"] or []:
            if len(" ".join(str(step[4]).split())) > 240:
                return row["index"], str(step[4])
    raise AssertionError("no value long enough to be cut in any timeline")


def test_an_episode_shows_the_expected_answer_and_notes_and_a_cut_value_opens_whole(run: Path) -> None:
    rows = embedded_episodes((run / "report.html").read_text(encoding="utf-8"))
    index, full = _long_value(rows)
    wrong = next(r for r in rows if r["answered"] and not r["correct"])
    noted = next(r for r in rows if r["notes"])
    with chromium() as browser:
        page, problems = open_report(browser, run / "report.html")
        page.goto(f"{(run / 'report.html').resolve().as_uri()}#episode/{wrong['index']}")
        page.wait_for_selector("#episode table.timeline")
        facts = dict(row.split("\t", 1) for row in page.inner_text("#episode table.facts").splitlines() if "\t" in row)
        assert facts["answer"] == wrong["answer"] != facts["expected answer"] == str(wrong["expected"])
        assert (facts["matching rule"], facts["decided by"]) == (wrong["match"], wrong["answer_rule"])
        page.goto(f"{(run / 'report.html').resolve().as_uri()}#episode/{noted['index']}")
        title = f"{noted['agent']} · {noted['item']} · {noted['condition']} · seed {noted['seed']}"
        page.wait_for_function(f"document.getElementById('episode-title').textContent === {json.dumps(title)}")
        assert page.locator("#episode ul.notes li").all_inner_texts() == noted["notes"]

        page.goto(f"{(run / 'report.html').resolve().as_uri()}#episode/{index}")
        page.wait_for_selector("#episode table.timeline")
        cut = page.locator("#episode table.timeline details.whole").filter(has_text=full[:40]).first
        body = cut.locator(".whole-text")
        assert not body.is_visible()
        summary = cut.locator("summary")
        assert summary.inner_text().endswith(f"… show all {len(full):,} characters")
        summary.click()
        assert body.is_visible() and body.text_content() == full  # every character, line breaks kept
        assert summary.inner_text() == f"hide ({len(full):,} characters)"
        summary.click()
        assert not body.is_visible()
        assert problems.messages == []


@pytest.fixture(scope="module")
def slow_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One task under a latency of 1.1 s: the calls after it are at four-digit milliseconds."""
    if missing() is not None:
        pytest.skip(f"no browser to drive: {missing()}")
    out = tmp_path_factory.mktemp("slow") / "run"
    done = run_main("run", "scenarios/travel.yaml", "--task", "cheapest-trip", "--agent", "recovering", "--hazard",
                    "latency:seconds=1.1", "--transport", "memory", "--call-timeout", "5", "--no-progress",
                    "--out", str(out), cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return out


def test_a_four_digit_ms_stays_on_one_line(slow_run: Path) -> None:
    rows = embedded_episodes((slow_run / "report.html").read_text(encoding="utf-8"))
    slow = next(r for r in rows if r["condition"] != "clean")
    assert max(step[0] for step in slow["timeline"] if step[0] is not None) >= 1000
    with chromium() as browser:
        page, problems = open_report(browser, slow_run / "report.html")
        page.goto(f"{(slow_run / 'report.html').resolve().as_uri()}#episode/{slow['index']}")
        page.wait_for_selector("#episode table.timeline")
        cells = page.locator("#episode table.timeline tbody td:first-child")
        heights = cells.evaluate_all(
            """cells => cells.filter(c => c.textContent.length >= 4).map(c => {
                 const range = document.createRange();
                 range.selectNodeContents(c);
                 return [range.getBoundingClientRect().height, parseFloat(getComputedStyle(c).lineHeight)];
               })"""
        )
        assert heights, "no four-digit ms in the timeline"
        assert all(text <= line * 1.2 for text, line in heights), heights  # one line each, never wrapped
        assert problems.messages == []


HOSTILE_AGENT = '<img src=x onerror="window.pwned=1">'
HOSTILE_ANSWER = "<script>window.pwned=2</script>\x00\ud800 [link=javascript:alert(3)]x[/link]"


def test_names_and_answers_from_a_strangers_trace_are_text_in_the_page(run: Path, tmp_path: Path) -> None:
    """A trace from someone else, its agent named with an HTML tag whose handler runs script and its answer a
    script element, a NUL and a lone surrogate: the report shows them as text and runs nothing of them."""
    copy = tmp_path / "copy"
    (copy / "traces").mkdir(parents=True)
    trace = sorted((run / "traces").glob("naive.travel.fare-class.clean.*.jsonl"))[0]
    events = [json.loads(line) for line in trace.read_text(encoding="utf-8").splitlines()]
    for event in events:
        if event["type"] == "episode_started":
            event["run"]["agent"] = HOSTILE_AGENT
        if event["type"] == "answer_submitted":
            event["answer"] = HOSTILE_ANSWER
    (copy / "traces" / trace.name).write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    done = run_main("score", str(copy / "traces"), "--scenarios", str(ROOT / "scenarios"), "--out",
                    str(copy / "report.html"), cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
    shown = HOSTILE_ANSWER.replace("\ud800", "\ufffd")
    with chromium() as browser:
        page, problems = open_report(browser, copy / "report.html")
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(f"{(copy / 'report.html').resolve().as_uri()}#episode/0")
        page.wait_for_selector("#episode table.facts")
        facts = dict(row.split("\t", 1) for row in page.inner_text("#episode table.facts").splitlines() if "\t" in row)
        assert facts["answer"] == shown, repr(facts["answer"])
        assert page.inner_text("#episode-title").startswith(HOSTILE_AGENT)
        assert page.evaluate("window.pwned") is None and dialogs == []
        assert page.locator("img[src=x]").count() == 0 and page.locator("script:not([src])").count() >= 1
        assert HOSTILE_AGENT in page.inner_text("body")
        assert problems.messages == []
