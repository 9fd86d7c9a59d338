"""Helpers for the hazard tests: open an in-memory episode with a real SDK client, read its trace, and the pieces
of the scripted reference clients (golden-path runner, re-list adapter, output normaliser).

No fixtures here (they would be invisible to sibling modules without a conftest); plain functions only.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as types
from conftest import WAIT_S
from mcp import Client

from mcp_hazard.condition import Condition
from mcp_hazard.hazards import parse_hazard_option
from mcp_hazard.scenario.expressions import render
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scenario.models import Task
from mcp_hazard.server.served_episode import SUBMIT_TOOL, Episode
from mcp_hazard.server.stdio import single_episode_server

REPO_ROOT = Path(__file__).resolve().parents[2]
SCENARIOS_DIR = REPO_ROOT / "scenarios"
TRAVEL = SCENARIOS_DIR / "travel.yaml"
LEGACY = "legacy"
MODERN = "2026-07-28"
DEADLINE = WAIT_S  # a hang guard for one episode, not a speed assertion


# -- conditions and episodes ----------------------------------------------------------------------------------------


def hazard_options(*texts: str) -> list[HazardSpec | str]:
    """`KIND[:key=value,...]` texts parsed exactly as the CLI parses `--hazard`."""
    options: list[HazardSpec | str] = []
    for text in texts:
        parsed = parse_hazard_option(text)
        options.extend(parsed if isinstance(parsed, list) else [parsed])
    return options


def condition(*hazards: str, seed: int = 0, profile: str = "strict") -> Condition:
    return Condition(seed=seed, profile=profile, hazards=hazard_options(*hazards))  # type: ignore[arg-type]


def new_episode(
    scenario: LoadedScenario, task_id: str, cond: Condition, trace_dir: Path, *, sleep: bool = True, name: str = "ep"
) -> Episode:
    task = scenario.model.task(task_id)
    assert task is not None, task_id
    return Episode(
        episode_id=name, scenario=scenario, task=task, condition=cond, trace_dir=trace_dir, transport="memory",
        sleep=sleep,
    )  # fmt: skip


@asynccontextmanager
async def memory_client(
    scenario: LoadedScenario,
    task_id: str,
    cond: Condition,
    trace_dir: Path,
    *,
    mode: str = LEGACY,
    sleep: bool = True,
    name: str = "ep",
    **client_options: Any,
) -> AsyncIterator[tuple[Client, Episode]]:
    """A real `mcp.Client` connected in memory to the real server serving one episode; the episode ends on exit."""
    episode = new_episode(scenario, task_id, cond, trace_dir, sleep=sleep, name=name)
    try:
        async with Client(single_episode_server(episode), mode=mode, **client_options) as client:
            yield client, episode
    finally:
        episode.end("disconnected")


def read_events(path: Path | None) -> list[dict[str, Any]]:
    assert path is not None
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def fired(events: list[dict[str, Any]]) -> list[tuple[str, str, int, str]]:
    """(kind, tool, slot, failpoint) of every hazard_fired event, in order."""
    return [(e["kind"], e["tool"], e["slot"], e["failpoint"]) for e in events if e["type"] == "hazard_fired"]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


def blocks(result: types.CallToolResult) -> list[str]:
    return [block.text for block in result.content if isinstance(block, types.TextContent)]


def main_text(result: types.CallToolResult) -> str:
    """The served text without the guided profile's hint blocks."""
    return "\n".join(text for text in blocks(result) if not text.startswith("Hint: "))


def hint_of(result: types.CallToolResult) -> str:
    return "\n".join(text for text in blocks(result) if text.startswith("Hint: "))


def value_of(result: types.CallToolResult) -> Any:
    """What a plain client takes from a result: structured content, else the text as JSON, else the text."""
    if result.structured_content is not None:
        return result.structured_content
    text = main_text(result)
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


# -- the scripted reference client ------------------------------------------------------------------------------------

Step = Callable[[str, dict[str, Any]], Awaitable[Any]]


async def follow_golden_path(client: Client, task: Task, step: Step) -> str:
    """Walk the task's golden path, getting each step's value from `step` (where a recovery happens), submit the
    answer, and return it. The golden path is known to this reference client; every value comes from the server."""
    results: dict[str, Any] = {}
    for golden in task.golden_path.steps:
        results[golden.id] = await step(golden.tool, render(golden.arguments, results))
    answer = render(task.golden_path.answer, results)
    text = answer if isinstance(answer, str) else json.dumps(answer)
    done = await client.call_tool(SUBMIT_TOOL, {"answer": text})
    assert not done.is_error, blocks(done)
    return text


class Agent:
    """A scripted client: remembers the last listing and counts what it did."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.tools: dict[str, types.Tool] = {}
        self.errors: list[str] = []

    async def relist(self) -> dict[str, types.Tool]:
        listing = await self.client.list_tools()
        self.tools = {tool.name: tool for tool in listing.tools}
        return self.tools

    async def call(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        result = await self.client.call_tool(name, arguments)
        if result.is_error:
            self.errors.append("\n".join(blocks(result)))
        return result


DAY_FIRST = r"^\d{2}/\d{2}/\d{4}$"


def adapt_to_listing(tools: dict[str, types.Tool], name: str, arguments: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """How a client adapts a call after re-listing, from the listing alone: the tool under its new name (a listed
    tool whose name extends the old one), a renamed argument (one unknown argument + one missing required one), a
    new required constant, a number now sent as text, a date now in DD/MM/YYYY."""
    if name not in tools:
        candidates = sorted(other for other in tools if other.startswith(name))
        assert len(candidates) == 1, f"cannot find what {name!r} became in {sorted(tools)}"
        name = candidates[0]
    schema = tools[name].input_schema
    properties: dict[str, Any] = schema.get("properties") or {}
    required = [r for r in schema.get("required", []) if r not in arguments]
    args = dict(arguments)
    unknown = [key for key in args if key not in properties]
    consts = [r for r in required if "const" in properties[r]]
    for key in consts:
        args[key] = properties[key]["const"]
    others = [r for r in required if r not in consts]
    if len(unknown) == 1 and len(others) == 1:
        args[others[0]] = args.pop(unknown[0])
    for key, value in list(args.items()):
        prop = properties.get(key, {})
        if prop.get("type") == "string" and isinstance(value, int | float) and not isinstance(value, bool):
            args[key] = str(value)
        if prop.get("pattern") == DAY_FIRST and isinstance(value, str) and not re.match(DAY_FIRST, value):
            args[key] = dt.date.fromisoformat(value).strftime("%d/%m/%Y")
    return name, args


def correct_from_error(message: str, hint: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """A corrected call built from the error (and, when served, the hint); None when they say too little."""
    args = dict(arguments)
    field = re.search(r"Invalid argument '([^']+)'", message)
    if field and "expected date format" in message:
        args[field.group(1)] = dt.date.fromisoformat(args[field.group(1)]).strftime("%d/%m/%Y")
        return args
    if field and "wrong type" in message:
        args[field.group(1)] = str(args[field.group(1)])
        return args
    renamed = re.search(r"The argument '([^']+)' is now called '([^']+)'", hint) or re.search(
        r"unexpected argument '([^']+)'; missing required argument '([^']+)'", message
    )
    if renamed:
        args[renamed.group(2)] = args.pop(renamed.group(1))
        return args
    flag = re.search(r'Pass (\w+)="([^"]*)"', hint)
    if flag:
        args[flag.group(1)] = flag.group(2)
        return args
    return None


# -- normalising drifted output -------------------------------------------------------------------------------------

_NUMBER_WITH_UNIT = re.compile(r"^(-?\d+(?:\.\d+)?)(?: [^\s\d]+)?$")


def _number(text: str) -> Any:
    match = _NUMBER_WITH_UNIT.match(text)
    if not match:
        return text
    raw = match.group(1)
    return float(raw) if "." in raw else int(raw)


def _unwrap(value: Any) -> Any:
    if isinstance(value, str):
        return _number(value)
    if isinstance(value, list):
        return [_unwrap(item) for item in value]
    if isinstance(value, dict):
        return {key: _unwrap(item) for key, item in value.items()}
    return value


def _label_lines(text: str) -> Any:
    """`Flights #1 / Flight Id: AU-412` lines back into {"flights": [{"flight_id": "AU-412"}]}."""
    root: dict[str, Any] = {}
    for line in text.splitlines():
        label, sep, raw = line.partition(": ")
        if not sep:
            continue
        value: Any = {"yes": True, "no": False, "-": None, "(none)": []}.get(raw, raw)
        node: Any = root
        segments = label.split(" / ")
        for position, segment in enumerate(segments):
            last = position == len(segments) - 1
            name, _, index = segment.partition(" #")
            key = name.strip().lower().replace(" ", "_")
            if index:
                items = node.setdefault(key, [])
                slot = int(index) - 1
                while len(items) <= slot:
                    items.append({})
                if last:
                    items[slot] = value
                node = items[slot]
            elif last:
                node[key] = value
            else:
                node = node.setdefault(key, {})
    return root


def normalise(text: str) -> Any:
    """What a careful client does with output in an unexpected form: take the JSON even when prose follows it, or
    read label/value lines, then turn '189.0 EUR'-style strings back into numbers."""
    try:
        value, _end = json.JSONDecoder().raw_decode(text.strip())
    except json.JSONDecodeError:
        value = _label_lines(text)
    return _unwrap(value)


def leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in leaves(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in leaves(item)]
    return [value]
