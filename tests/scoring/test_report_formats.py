"""Every report format on a report scored from real traces: the numbers are there, written the documented way."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from mcp_hazard.scoring.aggregate import aggregate
from mcp_hazard.scoring.report import render
from mcp_hazard.scoring.report.markdown import escape
from mcp_hazard.scoring.report.table import render_table

from .test_report_support import (
    HOSTILE,
    embedded_episodes,
    expected_rows,
    markdown_rows,
    missing_rows,
    read_html,
    report_of,
    table_rows,
    write_traces,
)


@pytest.fixture(scope="module")
def traces(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_traces(tmp_path_factory.mktemp("report-traces"))


@pytest.fixture(scope="module")
def report(traces: Path) -> dict[str, Any]:
    return report_of(traces)


def test_the_traces_give_varied_numbers(traces: Path, report: dict[str, Any]) -> None:
    """Guards the other tests: they only mean something if the report has hazards, recoveries and failures."""
    assert report["episodes"] == len(list(traces.glob("*.jsonl"))) > 100
    assert report["warnings"] == []
    assert 0 < report["overall"]["successes"] < report["episodes"]
    assert set(report["groups"]["agent"]) == {"golden", "retrier"}
    assert report["recovery"]["transient_error"]["paths"].get("retry", 0) > 0
    assert any(r["robustness_ratio"] is not None and r["robustness_ratio"] < 1 for r in report["robustness"])
    ratios = {(r["agent"], r["intervention"]): r["robustness_ratio"] for r in report["intervention_robustness"]}
    agents, kinds = ("golden", "retrier"), ("rename", "reorder")
    assert ratios == {(a, i): 0.0 if i == "rename" else 1.0 for a in agents for i in kinds}
    assert {"strict", "guided"} == set(report["groups"]["profile"])
    assert max(r["k"] for r in report["pass_k"]) == 2


def test_json_is_unchanged(report: dict[str, Any]) -> None:
    text = render(report, "json")
    assert json.loads(text) == report
    assert text.startswith('{\n  "report_schema_version": 4')


def test_table_holds_every_number_and_fits_120_columns(report: dict[str, Any]) -> None:
    text = render(report, "table")
    assert max(len(line) for line in text.splitlines()) <= 120
    assert missing_rows(table_rows(text), expected_rows(report)) == []
    # by hazard kind would repeat by condition row for row (each condition is one kind): left out
    assert "Success by hazard kind" not in text and "Success by agent" not in text
    recovery = report["recovery_by_agent"]["transient_error"]["retrier"]
    rows = table_rows(text)["Recovery paths per hazard kind and agent"]
    row = next(r for r in rows if r[:3] == ["transient_error", "execution_failure", "retrier"])
    assert row[7:] == [f"retry ×{recovery['paths']['retry']}", f"{recovery['mean_calls_to_recover']:.1f}"]
    # nothing is pooled over agents: no table without an agent column or an agent per column
    for title, found in table_rows(text).items():
        if title not in ("Overall", "Hazard kinds left out of some tasks", "Nothing to show"):
            assert any("golden" in cell for row in found for cell in row), title


def test_markdown_holds_every_number_with_its_meaning(report: dict[str, Any]) -> None:
    text = render(report, "markdown")
    assert text.startswith("# mcp-hazard report\n")
    assert missing_rows(markdown_rows(text), expected_rows(report)) == []
    for meaning in (
        "Robustness ratio = Acc(condition)/Acc(clean) over items run both ways",
        "Paired accuracy = share of items solved both clean and under the condition",
        "pass^k = chance all k attempts succeed",
        "pass@k = chance at least one of k attempts succeeds",
    ):
        assert meaning in text
    for title, rows in markdown_rows(text).items():  # every row has as many cells as its header
        assert {len(row) for row in rows} <= {len(rows[0]) if rows else 0}, title
    gains = {(r["agent"], r["condition"]): r["gain"] for r in report["hint_gain"]}
    rows = markdown_rows(text)["Hint gain"]
    for agent, condition, *_, gain, _new, _reg, _mde in rows[1:]:
        expected = gains[(agent, condition)] * 100
        assert gain == f"{0.0 if abs(expected) < 0.05 else expected:+.1f} pp"


def test_html_is_balanced_self_contained_and_holds_every_number(report: dict[str, Any]) -> None:
    text = render(report, "html")
    reader = read_html(text)
    assert reader.errors == []
    assert missing_rows(reader.sections, expected_rows(report)) == []
    assert reader.svgs == 4
    for plot in ("plot-robustness", "plot-intervention-robustness", "plot-compounding-by-agent", "plot-decay"):
        assert f'id="{plot}"' in text
    lowered = text.lower()
    for outside in ("http://", "https://", "<link", "@import", "url(", "src="):
        assert outside not in lowered, outside
    assert lowered.count("<script") == 2  # the embedded episodes and the script that draws them, both inline
    assert "report schema version 4" in text
    assert report["generated_by"] in text
    # a heatmap: every recovery cell that has a rate is coloured by it and links to its episodes
    for kind, row in report["recovery_by_agent"].items():
        for agent, entry in row.items():
            cell = re.search(
                rf'<td class="num heat-cell cell" style="--heat:(#[0-9a-f]{{6}});--ink:#[0-9a-f]{{6}}"'
                rf'[^>]*><a href="#episodes\?agent={agent}&amp;hazards_fired={kind}">'
                rf"{entry['rate'] * 100:.1f}% \({entry['recovered']}/{entry['fired']}\)</a></td>",
                text,
            )
            assert cell is not None if entry["fired"] else cell is None, (agent, kind)
    # one line per agent in the compounding plot, and the reference line at 1.0 in each robustness plot
    assert text.count('class="line"') == 2 * len(report["groups"]["agent"])  # success by length, decay
    assert text.count('class="reference"') == 2
    # every episode is embedded for the drill-down, in the per-episode order
    rows = embedded_episodes(text)
    assert [r["trace"] for r in rows] == [r["trace"] for r in report["per_episode"]]
    assert [r["index"] for r in rows] == list(range(len(rows)))


def hostile_report(report: dict[str, Any]) -> dict[str, Any]:
    """The real report with a hostile name in every place a scenario, task, agent or condition name can appear."""
    bad = copy.deepcopy(report)
    entry = next(iter(bad["groups"]["condition"].values()))
    for dimension in ("scenario", "task", "hazard_kind", "condition", "agent", "workflow"):
        bad["groups"][dimension][HOSTILE] = entry
    bad["recovery"][HOSTILE] = {**next(iter(bad["recovery"].values())), "paths": {HOSTILE: 1}, "family": HOSTILE}
    for section in ("robustness", "intervention_robustness", "hint_gain", "pass_k", "compounding"):
        bad[section][0]["agent"] = HOSTILE
    bad["failures"]["calls"][HOSTILE] = 1
    bad["failures_by_agent"][HOSTILE] = {"calls": {HOSTILE: 1}, "episodes": {HOSTILE: 1}}
    bad["groups_by_agent"]["task"][HOSTILE] = {HOSTILE: next(iter(bad["groups_by_agent"]["task"].values()))["golden"]}
    bad["success_by_agent"][HOSTILE] = {HOSTILE: next(iter(next(iter(bad["success_by_agent"].values())).values()))}
    bad["recovery_by_agent"][HOSTILE] = {HOSTILE: next(iter(next(iter(bad["recovery_by_agent"].values())).values()))}
    bad["agents"][HOSTILE] = next(iter(bad["agents"].values()))
    bad["per_episode"][0]["agent"] = HOSTILE
    bad["warnings"] = [f"traces/{HOSTILE}.jsonl:3: unknown event type '{HOSTILE}'; skipped"]
    bad["generated_by"] = HOSTILE
    return bad


def test_html_escapes_names_from_the_data(report: dict[str, Any]) -> None:
    text = render(hostile_report(report), "html")
    assert text.lower().count("<script") == 2  # only the report's own two
    escaped = "&lt;script&gt;alert(1)&lt;/script&gt;"
    assert text.count(escaped) >= 15
    assert re.search(rf"<text[^>]*>[^<]*{re.escape(escaped)}", text), "not escaped inside the SVG plots"
    reader = read_html(text)
    assert reader.errors == []
    assert HOSTILE in [row[0] for row in reader.sections["Success by condition and agent"]]
    assert HOSTILE in reader.sections["Recovery by hazard kind and agent"][0]  # as a column: an agent
    assert embedded_episodes(text)[0]["agent"] == HOSTILE  # data, which the page's script sets as text only


def test_markdown_and_table_show_hostile_names_as_text(report: dict[str, Any]) -> None:
    bad = hostile_report(report)
    markdown = render(bad, "markdown")
    assert "<script>" not in markdown
    rows = markdown_rows(markdown)["Success by condition and agent"]
    assert escape(HOSTILE) in markdown and HOSTILE in [r[0] for r in rows]
    bad["success_by_agent"]["[bold red]not markup[/]"] = bad["success_by_agent"][HOSTILE]
    table = render(bad, "table")
    assert "[bold red]not markup[/]" in table  # rich markup in a name is printed, not interpreted
    assert HOSTILE in table


def test_a_trace_file_with_a_hostile_agent_name_is_escaped(tmp_path: Path) -> None:
    """The server refuses such agent names, but a trace is a file anyone can edit: score one that carries it."""
    write_traces(tmp_path / "real", agents=("golden",), files=("travel.yaml",), hazards=(None,), seeds=(0,))
    source = sorted((tmp_path / "real").glob("*.jsonl"))[0]
    events = [json.loads(line) for line in source.read_text(encoding="utf-8").splitlines()]
    events[0]["run"]["agent"] = HOSTILE
    (tmp_path / "edited").mkdir()
    (tmp_path / "edited" / source.name).write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    report = report_of(tmp_path / "edited")
    assert list(report["groups"]["agent"]) == [HOSTILE]
    assert re.search(r"(?<!\\)<script", render(report, "markdown")) is None  # only as \<script\>
    page = render(report, "html")
    assert page.count("<script") == 2
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert read_html(page).errors == []


def test_empty_sections_are_said_in_words() -> None:
    empty = aggregate([], ["runs/x.jsonl:1: truncated last line; skipped"])
    table, markdown, page = render(empty, "table"), render(empty, "markdown"), render(empty, "html")
    for text in (table, markdown, page):
        assert "Nothing to show" in text
        assert "No hazard firings." in text
        assert "No item was run both clean and under a condition (run with --hazard)." in text
        assert "truncated last line" in text
    cells = [cell for rows in table_rows(table).values() for row in rows for cell in row]
    assert not any(cell.endswith("%") for cell in cells)  # the success rate of nothing is not a number
    reader = read_html(page)
    assert reader.errors == [] and reader.svgs == 0  # no plot of nothing
    # each empty section is one line in the list at the end, not a heading with an empty table
    assert len(re.findall(r"^- .+: .+$", table.split("Nothing to show", 1)[1], re.M)) >= 8
    assert "## Hint gain" not in markdown and "- **Hint gain**: No item was run in both hint profiles" in markdown


def test_numbers_are_written_one_way() -> None:
    from mcp_hazard.scoring.report import _format as f

    assert f.pct(0.53348) == "53.3%" and f.pct(None) == "–" and f.pct(1) == "100.0%"
    assert f.ci([0.48719, 0.5792]) == "[48.7–57.9]" and f.ci(None) == "–"
    assert f.ratio(2 / 3) == "0.67" and f.ratio(None) == "–"
    assert f.points(-0.09375) == "-9.4 pp" and f.points(-1e-9) == "+0.0 pp" and f.points(None) == "–"
    assert f.paths({"fallback": 1, "retry": 3}) == "retry ×3, fallback ×1" and f.paths({}) == "–"


def test_unknown_format_is_refused(report: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="unknown report format 'pdf'"):
        render(report, "pdf")


def test_a_new_section_shows_in_every_format_with_no_code_of_its_own(
    report: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The section model is where a table plugs in: rows, links to its episodes and heat need nothing more."""
    from mcp_hazard.scoring.report import html, markdown, section, sections, table

    agents = sorted(report["agents"])
    extra = section.Section(
        "made-up", "A made-up table", "One row per agent, to show how a new table plugs in.", ["agent", "share"],
        [[agent, f"{index * 50}.0%"] for index, agent in enumerate(agents)], "Nothing.", numeric={1}, scorecard=True,
        links=[{"agent": agent} for agent in agents], heat=[[None, index / 2] for index in range(len(agents))],
    )  # fmt: skip
    build = sections.build
    for renderer in (table, markdown, html):  # each renderer's own reference to `build`
        monkeypatch.setattr(renderer, "build", lambda data: [*build(data), extra])
    expected = {"A made-up table": [[agent, f"{index * 50}.0%"] for index, agent in enumerate(agents)]}
    assert missing_rows(table_rows(render(report, "table")), expected) == []
    assert "A made-up table ───" in render_table(report, verbose=False)  # and in the scorecard, as asked
    assert missing_rows(markdown_rows(render(report, "markdown")), expected) == []
    page = render(report, "html")
    assert missing_rows(read_html(page).sections, expected) == []
    assert f'<a href="#episodes?agent={agents[0]}">{agents[0]}</a>' in page  # a drill-down link
    assert '<td class="num heat-cell cell" style="--heat:#f7f7f7;' in page  # 0.5 is the middle of the scale
