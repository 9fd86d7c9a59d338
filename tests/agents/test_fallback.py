"""How the recovering agent falls back (after a permanent failure) and cross-checks (after a stale answer):
`mcp_hazard/agents/fallback.py` and `RecoveringAgent.fall_back`/`cross_check`.

The regression this guards: the fallback used to send the arguments of the failed call, in the failed tool's served
shape (its `request` object under replace, its augment constant), to every other tool, in an order made of name
words, writers included. It must re-map the plan's arguments onto each alternative's own schema, try the best fits
first and never a writer for a read.

The unit tests build listings by hand under neutral names. The last tests play real episodes through the real server
over the in-memory transport under both kinds and several interventions, and score them as `mcp-hazard score` does.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import WAIT_S

from mcp_hazard.agents import make_agent
from mcp_hazard.agents.drive import Brief
from mcp_hazard.agents.fallback import MAX_ALTERNATIVES, alternatives, named_tools, unfilled
from mcp_hazard.agents.recovering import RecoveringAgent, _Stuck
from mcp_hazard.condition import Condition
from mcp_hazard.hazards import REGISTRY, applicable_tools
from mcp_hazard.hazards.base import siblings
from mcp_hazard.runner.transports import open_episode
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.hazard_spec import HazardSpec
from mcp_hazard.scenario.models import Task
from mcp_hazard.scoring.episode_score import score_episode
from mcp_hazard.trace.reader import read_trace
from tests.interventions.support import shipped

ACCOUNT = "QB-40718-01"
PLANNED = {"account_id": ACCOUNT}  # the plan's call, in the original interface: get_balance(account_id=...)


def tool(
    name: str,
    description: str,
    properties: dict[str, Any],
    required: list[str],
    *,
    output: list[str] | None = None,
    read_only: bool | None = True,
) -> types.Tool:
    schema = {"type": "object", "properties": properties, "required": required, "additionalProperties": False}
    return types.Tool(
        name=name, description=description, input_schema=schema,
        output_schema={"type": "object", "properties": {f: {"type": "string"} for f in output}} if output else None,
        annotations=types.ToolAnnotations(read_only_hint=read_only) if read_only is not None else None,
    )  # fmt: skip


def request(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """Arguments nested in one `request` object, as replace serves them."""
    return {"request": {"type": "object", "properties": properties, "required": required,
                        "additionalProperties": False, "description": "All arguments of the request."}}  # fmt: skip


ACCOUNT_ID = {"type": "string", "pattern": "^QB-[0-9]{5}-[0-9]{2}$", "description": "Account id such as QB-10001-01"}
# The tool that fails: replaced (arguments nested in `request`) and augmented (its own constant, `channel`).
BALANCE = tool(
    "tool_fjord",
    "Current balance of one bank account, in the account's own currency. Always pass channel=\"default\".",
    {**request({"account_identifier": ACCOUNT_ID}, ["account_identifier"]),
     "channel": {"type": "string", "const": "default", "description": "Required. Always \"default\"."}},
    ["request", "channel"],
)  # fmt: skip
# The tool that serves the same fact: other argument names, another constant, cents instead of euros.
LEDGER = tool(
    "tool_birch",
    "Core-ledger query of an account's booked balance in cents. Always pass api_profile=\"v2\".",
    {"acct_no": {"type": "string", "description": "Ledger account number, same form as the account id (QB-10001-01)"},
     "api_profile": {"type": "string", "const": "v2", "description": "Required. Always \"v2\"."}},
    ["acct_no", "api_profile"],
)  # fmt: skip
# The same, replaced: the ledger's argument nested in `request`.
NESTED_LEDGER = tool(
    "tool_birch",
    "Core-ledger query of an account's booked balance in cents.",
    request({"acct_no_value": {"type": "string", "description": "Ledger account number, same form as the account id"}},
            ["acct_no_value"]),
    ["request"],
)  # fmt: skip
# Takes the planned call exactly, but writes: never asked for a read.
TRANSFER = tool(
    "tool_heath", "Transfer the whole balance of an account to the bank's savings pot. Each call moves money.",
    {"account_id": ACCOUNT_ID}, ["account_id"], read_only=False,
)  # fmt: skip
# Takes the planned call, reads, but documents a result without the balance.
ORDERS = tool(
    "tool_vale", "Recurring standing orders set up on an account.", {"account_id": ACCOUNT_ID}, ["account_id"],
    output=["standing_orders"],
)  # fmt: skip
# Needs a month the plan does not have: a call to it would be refused.
MONTHLY = tool(
    "tool_kelp", "Booked balance movements of an account in a calendar month.",
    {"account_id": ACCOUNT_ID, "month": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}$"}}, ["account_id", "month"],
)  # fmt: skip
BANK = [BALANCE, TRANSFER, ORDERS, MONTHLY, LEDGER]

GONE = "Error 503: this service is no longer available."
FRESH = {"acct_no": ACCOUNT, "balance_cents": 231847, "currency": "EUR"}


class ScriptedClient:
    """Answers `call_tool` from a script (tool name -> results, one per call, the last repeating) and records each
    call's name and arguments; just enough of `mcp.Client` for `RecoveringAgent.attempt`."""

    def __init__(self, script: dict[str, list[types.CallToolResult]]) -> None:
        self.script = script
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def call_tool(self, name: str, arguments: dict[str, Any], **_: Any) -> types.CallToolResult:
        answers = self.script[name]
        self.calls.append((name, arguments))
        return answers[min(sum(1 for n, _a in self.calls if n == name) - 1, len(answers) - 1)]

    @property
    def called(self) -> list[str]:
        return [name for name, _arguments in self.calls]


def ok(data: dict[str, Any]) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text="{}")], structured_content=data)


def error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def agent_with(tools: Sequence[types.Tool]) -> RecoveringAgent:
    agent = RecoveringAgent()
    agent.tools = {t.name: t for t in tools}
    agent.timeout = 1.0
    return agent


# -- choosing alternatives -----------------------------------------------------------------------------------------


def test_alternatives_rank_by_fit_leave_out_the_failed_tool_and_writers() -> None:
    chosen = [t.name for t in alternatives(BANK, BALANCE.name, "get_balance", PLANNED, ["balance"])]
    # the ledger before the tool that documents a result without the balance; the failed tool and the writer never
    assert chosen == [MONTHLY.name, LEDGER.name, ORDERS.name]
    # the writer fits the call best of all by its arguments: only its side effect keeps it out
    assert TRANSFER.name in [t.name for t in alternatives(BANK, BALANCE.name, "transfer_balance", PLANNED)]


def test_a_tool_the_plan_cannot_fill_takes_no_place() -> None:
    """The monthly tool shares the most words and takes `account_id` by name, but requires a month the plan does
    not have: the agent leaves it out before counting, so the ledger comes first."""
    ranked = alternatives(BANK, BALANCE.name, "get_balance", PLANNED, ["balance"])
    assert ranked[0].name == MONTHLY.name  # by fit alone
    fillable = alternatives(
        BANK, BALANCE.name, "get_balance", PLANNED, ["balance"], callable_=lambda t: t.name != MONTHLY.name
    )
    assert [t.name for t in fillable][:1] == [LEDGER.name]
    agent = agent_with(BANK)
    assert [t.name for t in agent.alternatives("get_balance", BALANCE.name, PLANNED, ["balance"])][:1] == [LEDGER.name]
    assert MONTHLY.name not in [t.name for t in agent.alternatives("get_balance", BALANCE.name, PLANNED, ["balance"])]


def test_a_tool_the_error_names_comes_first_unless_it_writes() -> None:
    agent = agent_with(BANK)
    named = agent.alternatives("get_balance", BALANCE.name, PLANNED, ["balance"], [f"use {ORDERS.name} instead"])
    assert [t.name for t in named][:2] == [ORDERS.name, LEDGER.name]
    writer = agent.alternatives("get_balance", BALANCE.name, PLANNED, ["balance"], [f"use {TRANSFER.name}"])
    assert TRANSFER.name not in [t.name for t in writer]


def test_named_tools_are_whole_words_of_the_text() -> None:
    listed = [tool("fare_archive", "x", {}, []), tool("fare_archive_lookup", "y", {}, [])]
    said = ["Error 503: gone.", "This failure is permanent; use another tool that serves the same data: "
            "fare_archive_lookup."]  # fmt: skip
    assert named_tools(said, listed) == ["fare_archive_lookup"]
    assert named_tools(["nothing here"], listed) == []


def test_unfilled_reads_required_places_through_nested_objects() -> None:
    schema = NESTED_LEDGER.input_schema
    assert unfilled(schema, {"request": {"acct_no_value": ACCOUNT}}, PLANNED) == []
    assert unfilled(schema, {"request": {}}, PLANNED) == ["request.acct_no_value"]
    assert unfilled(MONTHLY.input_schema, {"account_id": ACCOUNT}, PLANNED) == ["month"]


# -- the fallback call ---------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_fallback_remaps_the_planned_arguments_onto_the_alternative() -> None:
    agent = agent_with(BANK)
    client = ScriptedClient({BALANCE.name: [error(GONE)], LEDGER.name: [ok(FRESH)]})
    sent = {"request": {"account_identifier": ACCOUNT}, "channel": "default"}
    assert agent.remap(BALANCE, PLANNED) == sent  # what the failed tool got
    value = await agent.attempt(client, "get_balance", BALANCE.name, PLANNED, ["balance"])  # type: ignore[arg-type]
    assert value["balance"] == pytest.approx(2318.47)
    # the ledger's own names and its own constant: nothing of the failed tool's served shape
    assert client.calls == [(BALANCE.name, sent), (LEDGER.name, {"acct_no": ACCOUNT, "api_profile": "v2"})]


@pytest.mark.anyio
async def test_a_fallback_nests_the_planned_arguments_as_the_alternative_documents() -> None:
    agent = agent_with([BALANCE, TRANSFER, NESTED_LEDGER])
    client = ScriptedClient({BALANCE.name: [error(GONE)], NESTED_LEDGER.name: [ok(FRESH)]})
    value = await agent.attempt(client, "get_balance", BALANCE.name, PLANNED, ["balance"])  # type: ignore[arg-type]
    assert value["balance"] == pytest.approx(2318.47)
    assert client.calls[1:] == [(NESTED_LEDGER.name, {"request": {"acct_no_value": ACCOUNT}})]


@pytest.mark.anyio
async def test_a_fallback_is_bounded_and_never_calls_a_writer_or_a_tool_it_cannot_fill() -> None:
    agent = agent_with(BANK)
    nothing = ok({"standing_orders": []})
    client = ScriptedClient({
        BALANCE.name: [error(GONE)], LEDGER.name: [error("Ledger has no account.")], ORDERS.name: [nothing],
        TRANSFER.name: [ok({"moved": True})], MONTHLY.name: [ok({"balance": 1.0})],
    })  # fmt: skip
    with pytest.raises(_Stuck, match="no other tool gave the same data"):
        await agent.attempt(client, "get_balance", BALANCE.name, PLANNED, ["balance"])  # type: ignore[arg-type]
    assert TRANSFER.name not in client.called and MONTHLY.name not in client.called
    assert client.called[0] == BALANCE.name and client.called[1] == LEDGER.name
    assert len(client.called) <= 1 + MAX_ALTERNATIVES


@pytest.mark.anyio
async def test_a_refused_alternative_call_is_corrected_once_from_the_error() -> None:
    agent = agent_with([BALANCE, LEDGER])
    client = ScriptedClient({
        BALANCE.name: [error(GONE)],
        LEDGER.name: [error('Invalid arguments: Pass api_profile="v3" from now on.'), ok(FRESH)],
    })  # fmt: skip
    value = await agent.attempt(client, "get_balance", BALANCE.name, PLANNED, ["balance"])  # type: ignore[arg-type]
    assert value["balance"] == pytest.approx(2318.47)
    assert client.calls[-1] == (LEDGER.name, {"acct_no": ACCOUNT, "api_profile": "v3"})


@pytest.mark.anyio
async def test_repeated_503s_without_an_alternative_keep_retrying() -> None:
    """A 503 that repeats may still pass: when no other tool serves the data, the agent retries instead of giving
    up (it used to stop at the first failed fallback)."""
    agent = agent_with([BALANCE, TRANSFER])
    busy = error("Error 503: Service Unavailable.")
    client = ScriptedClient({BALANCE.name: [busy, busy, busy, ok({"account_id": ACCOUNT, "balance": 2318.47})]})
    value = await agent.attempt(client, "get_balance", BALANCE.name, PLANNED, ["balance"])  # type: ignore[arg-type]
    assert value["balance"] == 2318.47 and client.called == [BALANCE.name] * 4


# -- the cross-check -----------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_stale_answer_is_cross_checked_with_the_planned_arguments_remapped() -> None:
    agent = agent_with(BANK)
    stale = {"account_id": ACCOUNT, "balance": 2503.95, "as_of": "2025-12-01", "source": "cache"}
    client = ScriptedClient({
        BALANCE.name: [ok(stale)], LEDGER.name: [ok({**FRESH, "as_of": "2026-11-20", "source": "primary"})],
    })  # fmt: skip
    value = await agent.attempt(client, "get_balance", BALANCE.name, PLANNED, ["balance"])  # type: ignore[arg-type]
    assert value["balance"] == pytest.approx(2318.47)
    assert client.calls[1] == (LEDGER.name, {"acct_no": ACCOUNT, "api_profile": "v2"})


@pytest.mark.anyio
async def test_a_stale_answer_stands_when_no_alternative_answers_fresh() -> None:
    agent = agent_with([BALANCE, TRANSFER, LEDGER])
    stale = {"account_id": ACCOUNT, "balance": 2503.95, "source": "cache"}
    client = ScriptedClient({BALANCE.name: [ok(stale)], LEDGER.name: [ok({**FRESH, "source": "cache"})]})
    value = await agent.attempt(client, "get_balance", BALANCE.name, PLANNED, ["balance"])  # type: ignore[arg-type]
    assert value == stale and TRANSFER.name not in client.called


# -- end to end: the real server, in memory, scored --------------------------------------------------------------

PATHS = {"permanent_error": "fallback", "conflict": "cross_check"}
INTERVENTIONS = ([], ["augment"], ["replace"], ["names=random"], ["augment", "replace"], ["replace", "augment"])


def _cases() -> list[tuple[LoadedScenario, Task, str]]:
    return [
        (loaded, task, kind)
        for loaded in shipped()
        for task in loaded.model.tasks
        for kind in PATHS
        if applicable_tools(REGISTRY[kind], loaded.model, task)
    ]


def test_the_shipped_scenarios_have_tasks_for_both_kinds() -> None:
    kinds = [kind for _loaded, _task, kind in _cases()]
    assert kinds.count("permanent_error") >= 3 and kinds.count("conflict") >= 3


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("loaded", "task", "kind"), _cases(), ids=lambda v: getattr(v, "id", v) if not isinstance(v, str) else v
)
async def test_fallback_and_cross_check_recover_under_interventions(
    loaded: LoadedScenario, task: Task, kind: str, tmp_path: Path
) -> None:
    """Every firing is recovered by the kind's path with the first alternative asked (one call), no call is refused
    for its arguments, and only plan tools and declared siblings are ever called (never a writer)."""
    problems = []
    for interventions in INTERVENTIONS:
        for seed in (0, 1, 2):
            condition = Condition(seed=seed, hazards=[HazardSpec(kind=kind)], interventions=interventions)
            brief = Brief(prompt=task.prompt, plan=task.golden_path, call_timeout_s=1.0)
            with anyio.fail_after(WAIT_S):
                async with open_episode("memory", loaded, task.id, condition, tmp_path, agent="recovering") as ep:
                    await make_agent("recovering").run(ep.client, brief)
            trace = read_trace(ep.trace_path)
            score = score_episode(trace, loaded.model)
            calls = [c for c in trace.of_type("tool_called") if c["tool"] != "submit_answer"]
            planned = {step.tool for step in task.golden_path.steps}
            allowed = planned | {s for t in planned for s in siblings(loaded.model, t)}
            where = f"{'+'.join(interventions) or 'none'} seed {seed}"
            fired = [v for v in score.verdicts if v.kind == kind]
            if not score.correct:
                problems.append(f"{where}: answer {score.answer!r} ({score.episode_failure})")
            if not fired or any(v.path != PATHS[kind] or v.calls_to_recover != 1 for v in fired):
                problems.append(f"{where}: {fired}")
            refused = [(c["tool"], c["arguments"]) for c in calls if c["outcome"] == "invalid_arguments"]
            stray = sorted({c["tool"] for c in calls} - allowed)
            if refused or stray:
                problems.append(f"{where}: refused {refused}, stray {stray}")
    assert not problems, "\n".join(problems)
