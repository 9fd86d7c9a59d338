"""Shared by the report tests (no tests here): real traces from the server, and readers for each report format.

Traces come from the real server over the in-memory transport, driven by two scripted agents: `golden` follows the
golden path and stops at the first error (so hazards make it fail), `retrier` does the same but retries a failed call
up to three times (so it recovers from transient errors). Both hint profiles, two seeds, a clean run and four
hazards; the clean run also under the rename and reorder interventions (both agents keep the original interface:
rename defeats them, reorder does not).
"""

from __future__ import annotations

import base64
import gzip
import json
import re
import struct
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from mcp_hazard.agents.golden import result_value, run_golden_agent
from mcp_hazard.condition import Condition
from mcp_hazard.errors import UserError
from mcp_hazard.hazards import parse_hazard_option
from mcp_hazard.load import load_scenario
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.scenario.models import Task
from mcp_hazard.scoring.aggregate import aggregate
from mcp_hazard.scoring.collect import score_traces

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SCENARIO_FILES = ("travel.yaml", "retail.yaml")
HAZARDS = (None, "transient_error", "permanent_error", "output_drift", "silent_wrong_value")
SEEDS = (0, 1)
PROFILES = ("strict", "guided")
INTERVENTIONS: tuple[tuple[str, ...], ...] = ((), ("rename",), ("reorder",))
HOSTILE = "<script>alert(1)</script>"


async def run_retrier(client: Client, task: Task) -> None:
    """The golden path, retrying each failed call up to three times before giving up."""
    await client.list_tools()
    results: dict[str, Any] = {}
    for step in task.golden_path.steps:
        try:
            arguments = render(step.arguments, results)
        except ExpressionError:
            return
        for _ in range(4):
            result = await client.call_tool(step.tool, arguments)
            if not result.is_error:
                break
        if result.is_error:
            return
        results[step.id] = result_value(result)
    try:
        answer = render(task.golden_path.answer, results)
    except ExpressionError:
        return
    await client.call_tool("submit_answer", {"answer": answer if isinstance(answer, str) else json.dumps(answer)})


def _condition(hazard: str | None, seed: int, profile: str, interventions: tuple[str, ...] = ()) -> Condition:
    specs: list[Any] = []
    if hazard is not None:
        parsed = parse_hazard_option(hazard)
        specs = parsed if isinstance(parsed, list) else [parsed]
    return Condition(seed=seed, profile=profile, hazards=specs, interventions=list(interventions))  # type: ignore[arg-type]


def write_traces(
    trace_dir: Path,
    *,
    agents: tuple[str, ...] = ("golden", "retrier"),
    files: tuple[str, ...] = SCENARIO_FILES,
    hazards: tuple[str | None, ...] = HAZARDS,
    seeds: tuple[int, ...] = SEEDS,
    interventions: tuple[tuple[str, ...], ...] = INTERVENTIONS,
) -> Path:
    """Run every (scenario, task, agent, hazard, seed, profile) over the memory transport, and clean cells under each
    of `interventions`; returns `trace_dir`."""

    async def main() -> None:
        for name in files:
            scenario = load_scenario(SCENARIOS / name)
            for task in scenario.model.tasks:
                for agent in agents:
                    cells = [(h, ()) for h in hazards] + [(None, i) for i in interventions if None in hazards and i]
                    for hazard, intervened in cells:
                        for seed in seeds:
                            for profile in PROFILES:
                                condition = _condition(hazard, seed, profile, intervened)
                                try:
                                    async with open_episode("memory", scenario, task.id, condition, trace_dir,
                                                            agent=agent) as connected:  # fmt: skip
                                        if agent == "retrier":
                                            await run_retrier(connected.client, task)
                                        else:
                                            await run_golden_agent(connected.client, task)
                                except UserError:
                                    continue  # the hazard applies to no tool of this task: no episode

    trace_dir.mkdir(parents=True, exist_ok=True)
    anyio.run(main)
    return trace_dir


def report_of(trace_dir: Path) -> dict[str, Any]:
    scored = score_traces([str(trace_dir)])
    return aggregate(scored.scores, scored.warnings)


# -- the expected text of every number (computed here from the report dict, not with the renderer's helpers) -------


def pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def ci(bounds: list[float]) -> str:
    return f"[{bounds[0] * 100:.1f}–{bounds[1] * 100:.1f}]"


def two(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def short(entry: dict[str, Any]) -> str:
    return f"{pct(entry['rate'])} ({entry['successes']}/{entry['n']})"


def expected_rows(report: dict[str, Any]) -> dict[str, list[list[str]]]:
    """Section title -> rows that must appear in it, every cell as the report must print it."""
    groups = report["groups"]
    agents = sorted(report["agents"])

    def recovery_cell(entry: dict[str, Any] | None) -> str:
        if entry is None:
            return "not run"
        if not entry["fired"]:
            return "did not fire"  # never a rate
        return f"{pct(entry['rate'])} ({entry['recovered']}/{entry['fired']})"

    def irs_cell(entry: dict[str, Any] | None) -> str:
        if entry is None:
            return "not run"
        return f"{two(entry['irs'])} ({pct(entry['accuracy_original'])} → {pct(entry['accuracy_intervened'])})"

    lengths = sorted({r["golden_length"] for r in report["compounding_by_agent"]})
    by_length = {(r["agent"], r["golden_length"]): r for r in report["compounding_by_agent"]}
    rows: dict[str, list[list[str]]] = {
        "Agents": [
            [
                a,
                str(report["agents"][a]["episodes"]),
                f"{pct(groups['agent'][a]['rate'])} {ci(groups['agent'][a]['ci95'])}",
            ]
            for a in agents
        ],
        "Recovery by hazard kind and agent": [
            [kind, report["recovery"][kind]["family"], *(recovery_cell(row.get(a)) for a in agents)]
            for kind, row in report["recovery_by_agent"].items()
        ],
        "Success by condition and agent": [
            [condition, *(short(row[a]) if a in row else "not run" for a in agents)]
            for condition, row in report["success_by_agent"].items()
        ],
        "Interface robustness (IRS) by intervention and agent": [
            [intervention, *(irs_cell(row.get(a)) for a in agents)]
            for intervention, row in report["intervention_by_agent"].items()
        ],
        "Overall": [["episodes", str(report["episodes"])], ["agents", ", ".join(agents)]],
        "Premature answers per agent": [
            [a, str(e["n"]), str(e["successes"]), pct(e["rate"]), ci(e["ci95"])]
            for a in agents
            for e in [report["agents"][a]["premature"]]
        ],
        "Recovery paths per hazard kind and agent": [
            [k, report["recovery"][k]["family"], a, str(v["fired"]), str(v["recovered"]), pct(v["rate"]), ci(v["ci95"])]
            if v["fired"]
            else [k, report["recovery"][k]["family"], a, "0", "–", "did not fire", "–"]  # never a rate
            for k, row in report["recovery_by_agent"].items()
            for a, v in row.items()
        ],
        **{
            title: [
                [key, *(short(row[a]) if a in row else "not run" for a in agents)]
                for key, row in report["groups_by_agent"][dimension].items()
            ]
            for dimension, title in (
                ("profile", "Success by hint profile and agent"),
                ("intervention", "Success by interface intervention and agent"),
                ("task", "Success by task and agent"),
                ("scenario", "Success by scenario and agent"),
            )
        },
        "Robustness": [
            [
                r["agent"],
                r["profile"],
                r["condition"],
                str(r["pairs"]),
                pct(r["accuracy_clean"]),
                pct(r["accuracy_condition"]),
                two(r["robustness_ratio"]),
                pct(r["paired_accuracy"]),
            ]
            for r in report["robustness"]
        ],
        "Robustness to interface interventions": [
            [
                r["agent"],
                r["profile"],
                r["intervention"],
                str(r["pairs"]),
                pct(r["accuracy_original"]),
                pct(r["accuracy_intervened"]),
                two(r["robustness_ratio"]),
                pct(r["paired_accuracy"]),
            ]
            for r in report["intervention_robustness"]
        ],
        "Hint gain": [
            [r["agent"], r["condition"], str(r["pairs"]), pct(r["accuracy_strict"]), pct(r["accuracy_guided"])]
            for r in report["hint_gain"]
        ],
        "pass@k and pass^k over seeds": [
            [
                r["agent"],
                r["condition"],
                r["profile"],
                r["intervention"],
                str(r["k"]),
                str(r["items"]),
                pct(r["pass_at_k"]),
                pct(r["pass_hat_k"]),
            ]
            for r in report["pass_k"]
            if r["over"] == "seeds"
        ],
        "Success by golden-path length and agent": [
            [str(length), *(short(by_length[(a, length)]) if (a, length) in by_length else "not run" for a in agents)]
            for length in lengths
        ],
        "Error compounding by golden-path length": [
            [
                r["agent"],
                r["profile"],
                f"{r['kind']}: {r['stressor']}",
                r["length"],
                str(r["pairs"]),
                pct(r["accuracy_base"]),
                pct(r["accuracy_changed"]),
                two(r["irs"]),
                two(r["compounding_factor"]),
            ]
            for r in report["compounding"]
        ],
        "Failure taxonomy": [
            [a, level, k, str(v), pct(v / sum(counts.values())), f"{sum(counts.values())} {unit}"]
            for a, entry in report["failures_by_agent"].items()
            for level, counts, unit in (
                ("failed call", entry["calls"], "failed calls"),
                ("episode", entry["episodes"], "episodes"),
            )
            for k, v in counts.items()
        ],
        "Efficiency": [
            [a, str(e["episodes"]), str(e["calls"]), str(e["golden_calls"]), two(e["calls_per_golden_call"])]
            for a, e in report["efficiency_by_agent"].items()
        ],
    }
    return rows


def embedded_episodes(page: str) -> list[dict[str, Any]]:
    """The episodes the HTML report embeds for its drill-down (gzip, then base64, in a script element)."""
    found = re.search(r'<script type="application/octet-stream" id="episode-data"[^>]*>([^<]*)</script>', page)
    assert found, "no embedded episode data"
    rows: list[dict[str, Any]] = json.loads(gzip.decompress(base64.b64decode(found.group(1))))
    return rows


def missing_rows(found: dict[str, list[list[str]]], expected: dict[str, list[list[str]]]) -> list[str]:
    """Expected rows not present (as a prefix of some row) in their section; [] when all are there."""
    problems = []
    for title, rows in expected.items():
        if title not in found:
            problems.append(f"no section {title!r} (sections: {sorted(found)})")
            continue
        for row in rows:
            if not any(have[: len(row)] == row for have in found[title]):
                problems.append(f"{title}: no row starting {row}")
    return problems


# -- readers: each format back into {section title: rows} --------------------------------------------------------


def table_rows(text: str) -> dict[str, list[list[str]]]:
    """The terminal table: a section starts at `Title ────`; cells are separated by two or more spaces."""
    sections: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for line in text.splitlines():
        heading = re.fullmatch(r"(\S.*?) ─{3,}", line)
        if heading:
            current = sections.setdefault(heading.group(1), [])
        elif current is not None and line.strip() and not set(line.strip()) <= {"─", " "}:
            current.append(re.split(r"\s{2,}", line.strip()))
    return sections


def markdown_rows(text: str) -> dict[str, list[list[str]]]:
    sections: dict[str, list[list[str]]] = {}
    current: list[list[str]] | None = None
    for line in text.splitlines():
        if line.startswith("## "):
            current = sections.setdefault(line[3:].strip(), [])
        elif current is not None and line.startswith("|") and not re.fullmatch(r"\|(-+:?\|)+", line):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            current.append([re.sub(r"\\(.)", r"\1", cell.strip()) for cell in cells])
    return sections


class HtmlReader(HTMLParser):
    """Checks that every tag is closed in order, and collects table rows under each <h2>."""

    VOID = frozenset({"meta", "link", "br", "hr", "img", "input", "col", "area", "base", "source", "wbr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.sections: dict[str, list[list[str]]] = {}
        self.title: str | None = None
        self.text: list[str] | None = None
        self.row: list[str] | None = None
        self.in_h2 = False
        self.svgs = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in self.VOID:
            self.stack.append(tag)
        if tag == "svg":
            self.svgs += 1
        if tag == "h2":
            self.in_h2, self.text = True, []
        elif tag == "tr":
            self.row = []
        elif tag in ("td", "th") and self.row is not None:
            self.text = []

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass  # <rect .../> in SVG: opened and closed at once

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"line {self.getpos()[0]}: </{tag}> closes <{self.stack[-1] if self.stack else None}>")
            return
        self.stack.pop()
        if tag == "h2" and self.text is not None:
            self.title = "".join(self.text).strip()
            self.sections.setdefault(self.title, [])
            self.in_h2, self.text = False, None
        elif tag in ("td", "th") and self.row is not None and self.text is not None:
            self.row.append("".join(self.text).strip())
            self.text = None
        elif tag == "tr" and self.row is not None and self.title is not None:
            self.sections[self.title].append(self.row)
            self.row = None

    def handle_data(self, data: str) -> None:
        if self.text is not None:
            self.text.append(data)


def read_html(text: str) -> HtmlReader:
    reader = HtmlReader()
    reader.feed(text)
    reader.close()
    if reader.stack:
        reader.errors.append(f"never closed: {reader.stack}")
    return reader


# -- PNG ------------------------------------------------------------------------------------------------------------


def png_facts(data: bytes) -> dict[str, Any]:
    """Width, height and how much of the image is not flat background, read with struct and zlib only.

    `busy` is the share of non-zero bytes in the decompressed (still filtered) scanlines: a blank page filters to
    almost all zeros, a page of tables and plots does not.
    """
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG file"
    offset, idat, header = 8, b"", b""
    while offset < len(data):
        (length,) = struct.unpack(">I", data[offset : offset + 4])
        kind = data[offset + 4 : offset + 8]
        body = data[offset + 8 : offset + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        offset += 12 + length
    width, height, depth, colour = struct.unpack(">IIBB", header[:10])
    raw = zlib.decompress(idat)
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour]
    expected = height * (1 + width * channels * depth // 8)
    busy = sum(1 for byte in raw if byte) / len(raw) if raw else 0.0
    return {"width": width, "height": height, "complete": len(raw) == expected, "busy": busy}
