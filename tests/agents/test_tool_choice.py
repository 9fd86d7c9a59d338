"""How the recovering agent picks a tool when the planned name is not served any more (`mcp_hazard/agents/matching.py`
and `RecoveringAgent.candidates`/`call`).

The unit tests build listings by hand, with neutral names, so only descriptions, schemas, annotations and output
schemas can tell tools apart. The last tests run every plan step of every shipped scenario against the listings the
renaming interventions serve and check the first choice is the right tool; the test (not the agent) reads the
intervention's mapping to know which tool is right.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import WAIT_S

from mcp_hazard.agents import make_agent
from mcp_hazard.agents.argument_fit import argument_fit, best_assignment, value_fit
from mcp_hazard.agents.drive import Brief
from mcp_hazard.agents.leaves import flat_view
from mcp_hazard.agents.matching import output_fit, planned_write, rank_tools, tool_writes
from mcp_hazard.agents.plan_reads import expected_fields
from mcp_hazard.agents.prose import idf_weights, prose_words, word_overlap
from mcp_hazard.agents.recovering import RecoveringAgent
from mcp_hazard.condition import Condition
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task
from mcp_hazard.trace.reader import read_trace
from tests.interventions.support import REPO_ROOT, episode, shipped

RENAMING = ("rename", "names=random", "names=realistic", "replace")
SEEDS = range(5)


def tool(
    name: str,
    description: str,
    properties: dict[str, Any] | None = None,
    required: list[str] | None = None,
    *,
    output: list[str] | None = None,
    read_only: bool | None = None,
) -> types.Tool:
    schema: dict[str, Any] = {"type": "object", "properties": properties or {}, "additionalProperties": False}
    if required is not None:
        schema["required"] = required
    return types.Tool(
        name=name, description=description, input_schema=schema,
        output_schema={"type": "object", "properties": {f: {"type": "string"} for f in output}} if output else None,
        annotations=types.ToolAnnotations(read_only_hint=read_only) if read_only is not None else None,
    )  # fmt: skip


# A mailbox served under neutral names: the reader says "message", never "read" or "email"; the sender says
# "e-mail", which is the planned name's word. Words alone pick the sender.
SEARCH = tool(
    "tool_fjord", "Search the inbox by keywords or sender; newest messages first.",
    {"q": {"type": "string", "description": "Keywords or a sender's e-mail address"}}, ["q"], read_only=True,
)  # fmt: skip
READER = tool(
    "tool_birch", "Full text of one inbox message by message id; meeting proposals also carry a structured invite.",
    {"m": {"type": "string", "pattern": "^MSG-[0-9]{5}$", "description": "Message id such as MSG-10000"}}, ["m"],
    read_only=True,
)  # fmt: skip
SENDER = tool(
    "tool_heath", "Send an e-mail from the mailbox. Each call sends a new message.",
    {
        "to": {"type": "string", "description": "Recipient e-mail address"},
        "subject": {"type": "string", "description": "Subject line"},
        "body": {"type": "string", "description": "Plain-text message body"},
    },
    ["to", "subject", "body"],
)  # fmt: skip
MAILBOX = [SEARCH, SENDER, READER]


def test_prose_words_join_hyphenated_compounds_and_drop_plurals() -> None:
    assert {"email", "message", "category"} <= prose_words("E-mail messages by categories")
    assert "mail" in prose_words("e-mail")  # the parts stay too
    assert prose_words("address") == {"address"}  # not a plural


def test_rare_words_weigh_more_than_shared_ones() -> None:
    documents = [{"get", "flight"}, {"get", "fare"}, {"get", "hotel"}]
    idf = idf_weights(documents)
    assert idf["flight"] > idf["get"]
    # "get" is in every document: sharing it says less than sharing "flight"
    assert word_overlap({"get", "flight"}, documents[0], idf) == 1.0
    assert word_overlap({"get", "flight"}, documents[1], idf) < 0.5
    assert word_overlap({"unknown"}, documents[0], idf) == 0.0  # a word no tool uses says nothing


@pytest.mark.parametrize(
    ("prop", "good", "bad"),
    [
        ({"type": "string", "pattern": "^MSG-[0-9]{5}$"}, "MSG-88213", "Pell Avenor"),
        ({"type": "string", "enum": ["EUR", "USD"]}, "USD", "JPY"),
        ({"type": "array", "items": {"type": "string", "pattern": "^CT-[0-9]{4}$"}}, ["CT-1041"], "CT-1041"),
        ({"type": "integer"}, 2026, "Marrowick"),
        ({"type": "string", "format": "date"}, "2026-05-12", "next Tuesday"),
        ({"type": "string", "description": "SKU such as FHM-00000"}, "FHM-20817", "20817"),
    ],
)
def test_a_value_that_keeps_the_documented_form_fits_better(prop: dict[str, Any], good: Any, bad: Any) -> None:
    assert value_fit(prop, good) > value_fit(prop, bad) + 0.5


def test_a_value_the_tool_description_lists_fits() -> None:
    prop = {"type": "string", "description": "Office name"}
    listed = "Time zone of an office. Offices: Marrowick, Tessaly Bay, Orinth."
    assert value_fit(prop, "Tessaly Bay", listed) > value_fit(prop, "Tessaly Bay", "Time zone of an office.")


def test_best_assignment_is_exact_and_leaves_an_argument_out_when_nothing_fits() -> None:
    # the greedy choice (row 0 -> column 0) would force row 1 onto a bad column
    total, columns = best_assignment([[3.0, 2.5], [2.9, -5.0]])
    assert columns == [1, 0] and total == pytest.approx(5.4)
    total, columns = best_assignment([[-9.0]])
    assert columns == [None] and total == -2.0


def test_required_arguments_the_plan_cannot_fill_count_against_a_tool() -> None:
    arguments = {"message_id": "MSG-88213"}
    assert argument_fit(READER.input_schema, arguments) > 2.0
    assert argument_fit(SENDER.input_schema, arguments) < 0.0  # two required arguments left empty
    constant = {"type": "object", "properties": {"m": READER.input_schema["properties"]["m"],
                "mode": {"type": "string", "const": "basic"}}, "required": ["m", "mode"]}  # fmt: skip
    assert argument_fit(constant, arguments) == pytest.approx(argument_fit(READER.input_schema, arguments))


NESTED = {
    "type": "object",
    "properties": {
        "carrier": {"type": "string", "enum": ["OSK", "PWF"], "description": "Carrier code"},
        "lane": {
            "type": "object", "description": "Where the parcel travels",
            "properties": {
                "from": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "Origin warehouse code"},
                "to": {"type": "string", "pattern": "^[A-Z]{3}$", "description": "Destination warehouse code"},
            },
            "required": ["from", "to"],
        },
        "parcel": {
            "type": "object",
            "properties": {
                "weight_kg": {"type": "number", "description": "Actual weight in kg"},
                "size_cm": {
                    "type": "object",
                    "properties": {
                        "length": {"type": "number", "description": "Longest side"},
                        "width": {"type": "number", "description": "Width"},
                    },
                    "required": ["length", "width"],
                },
            },
            "required": ["weight_kg", "size_cm"],
        },
        "mode": {"type": "string", "const": "basic"},
    },
    "required": ["carrier", "lane", "parcel", "mode"],
}  # fmt: skip


def test_arguments_go_to_the_leaves_of_nested_objects_and_back_into_their_shape() -> None:
    planned = {"carrier_code": "PWF", "origin": "ARN", "destination": "SAL", "weight_kg": 18.4, "length_cm": 60,
               "width_cm": 40}  # fmt: skip
    served = tool("rate_parcel", "Rates one parcel on a lane.", NESTED["properties"], NESTED["required"])
    assert RecoveringAgent().remap(served, planned) == {
        "carrier": "PWF",
        "lane": {"from": "ARN", "to": "SAL"},
        "parcel": {"weight_kg": 18.4, "size_cm": {"length": 60, "width": 40}},
        "mode": "basic",
    }
    # every planned argument has a place and nothing required is left empty: the call fits
    assert argument_fit(NESTED, planned) > 1.0
    flat, by_name = flat_view(NESTED)
    assert by_name["length"].path == ("parcel", "size_cm", "length") and by_name["length"].required
    assert "size_cm" in flat["properties"]["length"]["description"]  # the object above still says "cm"


def test_an_object_the_plan_passes_whole_stays_whole() -> None:
    served = tool(
        "t", "Takes a filter object.", {"filter": {"type": "object", "properties": {"q": {"type": "string"}}}}
    )
    assert RecoveringAgent().remap(served, {"filter": {"q": "x"}}) == {"filter": {"q": "x"}}


def test_side_effects_come_from_annotations_or_the_leading_verb() -> None:
    assert planned_write("send_email") and planned_write("createEvent") and not planned_write("read_email")
    assert tool_writes(SENDER)  # no annotations: "Send an e-mail ..."
    assert not tool_writes(READER)
    assert tool_writes(tool("t", "Look up a booking.", read_only=False))  # annotations win over the verb
    assert not tool_writes(tool("t", "Book one seat.", read_only=True))


def test_output_schema_decides_between_tools_that_take_the_same_call() -> None:
    stock = tool("a", "Stock report", output=["stores", "item_code"])
    catalogue = tool("b", "Catalogue search", output=["products"])
    assert output_fit(stock, ["stores"]) == 2.0
    assert output_fit(catalogue, ["stores"]) < 0
    assert output_fit(tool("c", "Undocumented result"), ["stores"]) == 0.0


def test_a_read_step_never_lands_on_a_writer_even_when_its_words_match() -> None:
    ranked = rank_tools(MAILBOX, "read_email", {"message_id": "MSG-88213"}, ["invite"])
    assert ranked[0].name == READER.name, ranked
    # the trap: by the planned name's words alone the sender fits better than the reader
    sender = next(c for c in ranked if c.name == SENDER.name)
    assert sender.writes and sender.description > next(c for c in ranked if c.name == READER.name).description


def test_between_tools_that_take_the_same_call_a_read_picks_the_one_without_side_effects() -> None:
    booking = {"b": {"type": "string", "pattern": "^BK-[0-9]{4}$", "description": "Booking id such as BK-0000"}}
    cancel = tool("tool_quarry", "Cancel a booking by booking id.", booking, ["b"])
    details = tool("tool_inlet", "Details of a booking by booking id.", booking, ["b"], read_only=True)
    ranked = rank_tools([cancel, details], "get_booking", {"booking_id": "BK-1234"})
    assert [c.name for c in ranked] == [details.name, cancel.name]
    assert ranked[0].arguments == ranked[1].arguments  # only the side effect tells them apart
    # and a planned write prefers the writer
    assert rank_tools([details, cancel], "cancel_booking", {"booking_id": "BK-1234"})[0].name == cancel.name


def test_a_documented_pattern_beats_shared_words() -> None:
    by_code = tool(
        "tool_vale", "Chain-wide stock report for one POS item code; one line per store.",
        {"c": {"type": "string", "pattern": "^[0-9]{5}$", "description": "Five-digit POS item code"}}, ["c"],
    )  # fmt: skip
    search = tool(
        "tool_kelp", "Search the catalogue by name or keyword; returns SKU, item code, name and brand.",
        {"q": {"type": "string", "description": "Product name, brand or keyword"}}, ["q"], output=["products"],
    )  # fmt: skip
    ranked = rank_tools([search, by_code], "stock_by_item_code", {"item_code": "20817"}, ["stores"])
    assert [c.name for c in ranked] == [by_code.name, search.name]


def test_candidates_keep_the_served_name_and_drop_writers_for_reads() -> None:
    agent = RecoveringAgent()
    agent.tools = {t.name: t for t in MAILBOX}
    assert agent.candidates("tool_fjord", {"q": "x"}) == ["tool_fjord"]
    chosen = agent.candidates("read_email", {"message_id": "MSG-88213"}, ["invite"])
    assert chosen[0] == READER.name and SENDER.name not in chosen


class ScriptedClient:
    """Answers `call_tool` from a table (tool name -> result) and records the calls; just enough of `mcp.Client`
    for `RecoveringAgent.call`."""

    def __init__(self, answers: dict[str, types.CallToolResult]) -> None:
        self.answers = answers
        self.called: list[str] = []

    async def call_tool(self, name: str, arguments: dict[str, Any], **_: Any) -> types.CallToolResult:
        self.called.append(name)
        return self.answers[name]


def _result(data: dict[str, Any] | None = None, error: str | None = None) -> types.CallToolResult:
    if error is not None:
        return types.CallToolResult(content=[types.TextContent(type="text", text=error)], is_error=True)
    return types.CallToolResult(content=[types.TextContent(type="text", text="{}")], structured_content=data)


@pytest.mark.anyio
async def test_a_failing_choice_falls_back_to_the_runner_up_and_never_to_a_writer() -> None:
    first = tool("tool_a", "Inbox message by message id.",
                 {"m": {"type": "string", "pattern": "^MSG-[0-9]{5}$", "description": "Message id"}}, ["m"],
                 read_only=True)  # fmt: skip
    second = tool("tool_b", "Archived inbox message by message id.",
                  {"m": {"type": "string", "description": "Message id such as MSG-10000"}}, ["m"],
                  read_only=True)  # fmt: skip
    agent = RecoveringAgent()
    agent.tools = {t.name: t for t in (first, second, SENDER)}
    client = ScriptedClient({
        "tool_a": _result(error="No message MSG-88213 in this inbox."),
        "tool_b": _result({"message_id": "MSG-88213", "invite": {"office": "Orinth"}}),
        SENDER.name: _result({"status": "sent"}),
    })  # fmt: skip
    value = await agent.call(client, "read_email", {"message_id": "MSG-88213"}, ["invite"])  # type: ignore[arg-type]
    assert value["invite"] == {"office": "Orinth"}
    assert client.called == ["tool_a", "tool_b"]


@pytest.mark.anyio
async def test_an_answer_without_the_fields_the_plan_reads_tries_the_runner_up() -> None:
    first = tool("tool_a", "Stock by item code.", {"c": {"type": "string", "pattern": "^[0-9]{5}$"}}, ["c"],
                 read_only=True)  # fmt: skip
    second = tool("tool_b", "Stock of an item code per store.", {"c": {"type": "string"}}, ["c"], read_only=True)
    agent = RecoveringAgent()
    agent.tools = {t.name: t for t in (first, second)}
    client = ScriptedClient({"tool_a": _result({"products": []}), "tool_b": _result({"stores": [{"qty": 1}]})})
    value = await agent.call(client, "stock_by_item_code", {"item_code": "20817"}, ["stores"])  # type: ignore[arg-type]
    assert value == {"stores": [{"qty": 1}]} and client.called == ["tool_a", "tool_b"]
    # when no runner-up does better, the first answer stands
    client = ScriptedClient({"tool_a": _result({"products": []}), "tool_b": _result({"other": 1})})
    value = await agent.call(client, "stock_by_item_code", {"item_code": "20817"}, ["stores"])  # type: ignore[arg-type]
    assert value == {"products": []}


def test_the_agent_reads_only_the_listing() -> None:
    """Choosing from the server's own mapping would be cheating: no agent module imports the interventions."""
    for path in (REPO_ROOT / "mcp_hazard" / "agents").glob("*.py"):
        source = path.read_text(encoding="utf-8")
        assert not re.search(r"mcp_hazard\.interventions|from \.\.interventions", source), path.name


# -- every plan step of the shipped scenarios, under the renaming interventions ------------------------------------


async def _planned_calls(loaded: LoadedScenario, task: Task, trace_dir: Path) -> list[dict[str, Any]]:
    """The arguments of every plan step with real earlier results: the golden agent's calls, clean."""
    brief = Brief(prompt=task.prompt, plan=task.golden_path, call_timeout_s=2.0)
    with anyio.fail_after(WAIT_S):
        async with open_episode("memory", loaded, task.id, Condition(seed=0), trace_dir, agent="golden") as ep:
            await make_agent("golden").run(ep.client, brief)
    calls = [c for c in read_trace(ep.trace_path).of_type("tool_called") if c["tool"] != "submit_answer"]
    assert [c["tool"] for c in calls] == [s.tool for s in task.golden_path.steps]
    return [c["arguments"] for c in calls]


def _shipped_tasks() -> list[tuple[LoadedScenario, Task]]:
    return [(loaded, task) for loaded in shipped() for task in loaded.model.tasks]


@pytest.mark.anyio
@pytest.mark.parametrize(("loaded", "task"), _shipped_tasks(), ids=lambda v: getattr(v, "id", ""))
async def test_every_shipped_plan_step_picks_the_right_tool(loaded: LoadedScenario, task: Task) -> None:
    with tempfile.TemporaryDirectory() as folder:
        planned = await _planned_calls(loaded, task, Path(folder))
    wrong = []
    for kind in RENAMING:
        for seed in SEEDS:
            served = episode(loaded, [kind], seed=seed, task=task)
            inner = {s.name: s.inner for s in served.surfaces()}
            tools = [t for t in served.served_tools() if t.name in inner]
            for index, (step, arguments) in enumerate(zip(task.golden_path.steps, planned, strict=True)):
                fields = expected_fields(task.golden_path, index)
                ranked = rank_tools(tools, step.tool, arguments, fields)
                if inner[ranked[0].name] != step.tool:
                    wrong.append(f"{kind} seed {seed} {step.tool}: chose {inner[ranked[0].name]} ({ranked[:2]})")
    assert not wrong, "\n".join(wrong)
