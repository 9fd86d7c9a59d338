"""One episode: one agent attempt at one task of one scenario under one condition, with its trace.

The episode owns all per-attempt state (call slots, whether an answer was submitted, the trace file), so the MCP
handlers stay stateless and many episodes can share one server process without cross-talk. This module holds its
state, its lifecycle and what it lists; call_path.py how it serves a call.
"""

from __future__ import annotations

import contextlib
import time
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

from mcp_hazard import __version__
from mcp_hazard.condition import Condition
from mcp_hazard.hazards import HazardEngine, ToolView, build_hazards, expand
from mcp_hazard.hazards.base import Hazard
from mcp_hazard.hazards.capabilities import changes_interface
from mcp_hazard.interventions import Surface, build_interventions
from mcp_hazard.logs import LogBudget, log
from mcp_hazard.scenario.behaviours import ToolOutcome, run_behaviour
from mcp_hazard.scenario.files import LoadedScenario
from mcp_hazard.scenario.models import Task, ToolSpec
from mcp_hazard.server.call_path import serve_call
from mcp_hazard.server.call_record import ToolCall
from mcp_hazard.server.restate import Restatement
from mcp_hazard.server.results import result_text, served_result
from mcp_hazard.server.served import ServedInterface, served_tool
from mcp_hazard.server.submit import SUBMIT_DESCRIPTION, SUBMIT_SCHEMA, SUBMIT_TOOL
from mcp_hazard.trace import events as ev
from mcp_hazard.trace.storage import StorageError
from mcp_hazard.trace.writer import TraceWriter

if TYPE_CHECKING:
    from mcp_hazard.server.guard import Guard

TASK_PROMPT_NAME = "task"
MAX_EARLY_REFUSALS = 100
REFUSALS_LOGGED = 20  # log lines an episode's refused frames may take: an agent may send nothing else


@lru_cache(maxsize=1)
def _mcp_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mcp")
    except PackageNotFoundError:
        return "unknown"


def describe_hazard(hazard: Hazard, targets: set[str]) -> dict[str, Any]:
    """A hazard as the trace records it: enough, with the condition, to say exactly what was injected."""
    return {
        "index": hazard.index,
        "kind": hazard.kind,
        "family": hazard.family,
        "recovery": list(hazard.recovery),
        "targets": sorted(targets),
        "schedule": hazard.schedule.model_dump(mode="json"),
        "params": hazard.params.model_dump(mode="json"),
    }


class Episode:
    checks_arguments: bool = True
    """Refuse a call whose arguments do not fit the tool's schema before running it. A proxy passes such calls on
    (the real server has the last word) and only labels a refusal that follows as `invalid_arguments`."""

    def __init__(
        self,
        *,
        episode_id: str,
        scenario: LoadedScenario,
        task: Task,
        condition: Condition,
        trace_dir: Path | None,
        transport: str,
        allow_python: bool = False,
        sleep: bool = True,
        agent: str | None = None,
    ) -> None:
        """`trace_dir=None` keeps the trace in memory; `sleep=False` records latency without waiting (for checks)."""
        self.id = episode_id
        self.scenario = scenario
        self.task = task
        specs = expand(list(condition.hazards), scenario.model, task)
        hazards = build_hazards(specs, scenario.model, task)  # raises UserError before any file is written
        self.interventions = build_interventions(list(condition.interventions), condition.seed, scenario.model, task)
        self.condition = condition.model_copy(update={"hazards": specs})
        self.transport = transport
        self.allow_python = allow_python
        self.tools: dict[str, ToolSpec] = {tool.name: tool for tool in scenario.model.task_tools(task)}
        self.hazards = hazards
        changing = {tool for hazard, targets in hazards if changes_interface(hazard) for tool in targets}
        self.served = ServedInterface(self.interventions, self.tools, changing)
        self.engine = HazardEngine(
            hazards, seed=condition.seed, scenario=scenario.model, task=task, profile=condition.profile,
            record=self._record_firing,
        )  # fmt: skip
        self.bus = InMemorySubscriptionBus()
        self.listen_handler = ListenHandler(self.bus)
        self.sleep = sleep
        self.agent = agent
        self.trace = TraceWriter(trace_dir / f"{episode_id}.jsonl" if trace_dir is not None else None)
        self.trace.on_failure = self._trace_failed
        self.slots: dict[str, int] = {}
        self.waiting: list[ToolCall] = []  # calls a latency hazard holds
        self.writes: list[dict[str, Any]] = []  # the writes (`effect: write`) that ran, which behaviours may read
        self.started = False
        self.ended = False
        self.end_reason: str | None = None
        self.answer: str | None = None
        self._early_refusals: list[dict[str, Any]] = []
        self.refusals_logged = LogBudget(
            REFUSALS_LOGGED,
            f"episode {self.id}: its next refused frames are traced, not logged ({REFUSALS_LOGGED} were)",
        )
        self.restatement = Restatement(task.restate_known) if task.restate_known is not None else None
        self.guard: Guard | None = None
        if condition.profile == "guarded":  # the harness (and what it judges answers with) only where it serves
            from mcp_hazard.server.guard import Guard

            self.guard = Guard(scenario.model, task)
        self._tools_seen: dict[str, ToolSpec] | None = None
        self._tool_list: list[ToolSpec] = []
        # Built from the views and kept while the views are the same list (hazards/engine.py says when they change).
        self._index: tuple[list[ToolView] | None, dict[str, ToolView], dict[str, ToolView]] = (None, {}, {})
        self._listing: tuple[list[ToolView] | None, list[Surface] | None, list[types.Tool]] = (None, None, [])

    @property
    def guided(self) -> bool:
        return self.condition.profile == "guided"

    def hint(self, hint: str | None) -> str | None:
        return hint if self.guided else None

    report_trace_failure = True
    """Log one line when the trace cannot be written (`serve`); a run says it once itself, so its episodes do not."""
    runner = False
    """`mcp-hazard run` drives the episode and appends `agent_ended` to its trace (recorded in `episode_started`)."""

    def _trace_failed(self, failure: StorageError) -> None:
        """The trace could not take a line (a full disk, a read-only folder): the episode is over, since nothing it
        did from here on could be scored. Every later request gets one JSON-RPC error (server/app.py); the
        operator gets one line here, with the file, which the agent is never told."""
        self.ended = True
        self.end_reason = "trace_failed"
        self.trace.close()
        if self.report_trace_failure:
            log.error("episode ended: its trace cannot be written", episode=self.id, reason=str(failure))

    def _record_firing(self, *, hazard: Hazard, tool: str, failpoint: str, slot: int, change: dict[str, Any]) -> None:
        if self.guard is not None:
            self.guard.fired(hazard.kind, tool)
        self.trace.write(
            ev.HazardFired, hazard=hazard.index, kind=hazard.kind, family=hazard.family, tool=tool,
            failpoint=failpoint, slot=slot, change=change,
        )  # fmt: skip

    # -- lifecycle -------------------------------------------------------------------------------------------------

    def upstream_record(self) -> dict[str, Any] | None:
        """The real server behind the episode, for `episode_started` (proxy mode); None for a scenario's tools."""
        return None

    @property
    def takes_answer(self) -> bool:
        """Whether the episode serves `submit_answer` (a proxied server with no task to answer does not)."""
        return True

    def start(self, protocol_version: str) -> None:
        """Write `episode_started` on the first request, when the protocol version is known."""
        if self.started:
            return
        self.started = True
        self.trace.write(
            ev.EpisodeStarted,
            scenario=ev.ScenarioRef(id=self.scenario.id, path=self.scenario.path, sha256=self.scenario.sha256),
            task=self.task.id,
            condition=self.condition.model_dump(mode="json"),
            software={"mcp_hazard": __version__, "mcp": _mcp_version()},
            protocol_version=protocol_version,
            hazards=[describe_hazard(hazard, targets) for hazard, targets in self.hazards],
            run=ev.RunInfo(
                episode_id=self.id,
                transport=self.transport,  # type: ignore[arg-type]
                agent=self.agent,
                runner=self.runner,
            ),
            upstream=self.upstream_record(),
        )
        log.info("episode started", episode=self.id, scenario=self.scenario.id, task=self.task.id)
        for fields in self._early_refusals:
            self.trace.write(ev.FrameRefused, **fields)
        self._early_refusals.clear()

    def record_frame_refused(
        self, *, code: int, message: str, id: str | int | None, method: str | None, replied: bool
    ) -> None:
        """Trace a malformed frame (server/frames.py). One that arrives before the first good request waits until
        `episode_started` is written (at that request, or at the end when none came), so that stays the first line;
        after the end it is appended like a refused call. Kept to a bounded number before the start, so junk sent
        to an idle episode cannot grow memory. The log gets a line for each of the first REFUSALS_LOGGED."""
        self.refusals_logged.warning("frame refused", code=code, reason=message, episode=self.id)
        fields: dict[str, Any] = {"code": code, "message": message, "id": id, "method": method, "replied": replied}
        if self.started:
            self.trace.write(ev.FrameRefused, **fields)
        elif len(self._early_refusals) < MAX_EARLY_REFUSALS:
            self._early_refusals.append(fields)

    def cancel(self, call: ToolCall) -> None:
        """Record a hanging call as cancelled, once: by its own cancellation, or by the episode ending first."""
        if call in self.waiting:
            self.waiting.remove(call)
            self.record_call(call, "cancelled", error="cancelled by the client")

    def end(self, reason: str) -> None:
        """End the episode; never raises: a trace that cannot take its last lines has already said so once."""
        if self.trace.closed:
            return
        try:
            if not self.started and self._early_refusals:  # every frame the client sent was refused: keep them
                self.start("none")
            for waiting in list(self.waiting):  # calls still hanging when the client left: same record, same place
                self.cancel(waiting)
            self.ended = True
            self.end_reason = reason
            if self.started:
                self.trace.write(ev.EpisodeEnded, reason=reason)
        except StorageError:
            return
        self.trace.close()
        log.info("episode ended", episode=self.id, reason=reason)

    def close(self, reason: str) -> None:
        """End the episode from the control side (`DELETE`, the TTL, the server's shutdown). Unlike a transport's
        `end`, an episode no client ever joined still leaves its trace: `episode_started` (protocol version
        "none", as for an agent that never connected) and `episode_ended` with `reason`, so that every episode a
        server created is on disk, as docs/http-api.md says."""
        if not self.started and not self.trace.closed:
            with contextlib.suppress(StorageError):  # the trace has said so once; the episode ends all the same
                self.start("none")
        self.end(reason)

    # -- what the agent sees ---------------------------------------------------------------------------------------

    def prompt_text(self) -> str:
        return f"{self.task.prompt.strip()}\n\nWhen you have the answer, call the `{SUBMIT_TOOL}` tool with it."

    def task_uri(self) -> str:
        return f"task://{self.scenario.id}/{self.task.id}"

    def views(self) -> list[ToolView]:
        tools = self.tools
        if tools is not self._tools_seen:  # a proxied server's new list replaces the dict
            self._tools_seen, self._tool_list = tools, list(tools.values())
        return self.engine.views(self._tool_list)

    def surfaces(self, *, accepting: bool = False, views: list[ToolView] | None = None) -> list[Surface]:
        """The listing as served: the hazard views, then every interface intervention on top (served.py)."""
        return self.served.surfaces(self.views() if views is None else views, accepting=accepting)

    def served_tools(self) -> list[types.Tool]:
        views = self.views()
        surfaces = self.surfaces(views=views)
        cached_views, cached_surfaces, tools = self._listing
        if cached_views is views and cached_surfaces is surfaces:
            return list(tools)
        by_name = self._views_by_name(views)
        tools = [self._tool(surface, by_name[surface.inner]) for surface in surfaces]
        if self.takes_answer:
            tools.append(types.Tool(name=SUBMIT_TOOL, description=SUBMIT_DESCRIPTION, input_schema=SUBMIT_SCHEMA))
        self._listing = (views, surfaces, tools)
        return list(tools)

    def _views_by_name(self, views: list[ToolView]) -> dict[str, ToolView]:
        return self._indexed(views)[0]

    def _indexed(self, views: list[ToolView]) -> tuple[dict[str, ToolView], dict[str, ToolView]]:
        """The views by served name and by original name (the first view of each)."""
        cached, by_name, by_original = self._index
        if cached is not views:
            by_name, by_original = {}, {}
            for view in views:
                by_name.setdefault(view.name, view)
                by_original.setdefault(view.original, view)
            self._index = (views, by_name, by_original)
        return by_name, by_original

    def _tool(self, surface: Surface, view: ToolView) -> types.Tool:
        return served_tool(self.tools[view.original], surface)

    def resolve(self, name: str) -> tuple[ToolSpec, ToolView, Surface | None] | None:
        """The tool a served name means now. Without interventions an original name still resolves, so a drift
        hazard can reject it; with interventions only the served names exist."""
        views = self.views()
        if self.interventions:
            surface = next((s for s in self.surfaces(views=views) if s.name == name), None)
            if surface is None:
                return None
            view = self._views_by_name(views)[surface.inner]
            if view.accepts is not None:  # keep what the tool accepts in served terms next to what it lists
                accepting = [s for s in self.surfaces(accepting=True, views=views) if s.name == name]
                surface = surface.derive(notes={**surface.notes, "accepting": accepting[0] if accepting else None})
            return self.tools[view.original], view, surface
        by_name, by_original = self._indexed(views)
        listed = by_name.get(name)
        if listed is not None:
            return self.tools[listed.original], listed, None
        original = by_original.get(name)
        if original is not None:
            return self.tools[name], original, None
        return None

    def list_tools(self) -> types.ListToolsResult:
        tools = self.served_tools()
        self.trace.write(ev.ToolsListed, tools=[tool.name for tool in tools])
        return types.ListToolsResult(tools=tools)

    def record_task_read(self, via: str) -> None:
        self.trace.write(ev.TaskRead, via=via)

    # -- calls (call_path.py serves them; these are what an episode of another kind changes) --------------------------

    call_tool = serve_call
    """`call_tool(name, arguments, notify=None)`: serve one `tools/call` (call_path.py); the function itself, not a
    method that awaits it, as this runs for every call."""

    async def execute(self, spec: ToolSpec, arguments: dict[str, Any]) -> ToolOutcome:
        """Run the tool: the scenario's behaviour here; a proxy forwards the call to the real server."""
        return run_behaviour(spec, arguments, allow_python=self.allow_python, writes=self.writes)

    def present(
        self, view: ToolView, result: Any, text: str | None, structured: Any, hints: list[str],
        original: ToolOutcome | None,
    ) -> types.CallToolResult:  # fmt: skip
        """A result as served: the text (or the result as JSON), then the hints; a proxy keeps the server's form."""
        return served_result(text if text is not None else result_text(result), hints, structured)

    def record_call(
        self, call: ToolCall, outcome: str, *, result: Any = None, text: str | None = None, error: str | None = None
    ) -> None:
        """Trace one call; its `below` (the call mapped below the interventions) is kept when it differs from what
        was sent, and is what the hazards' memory of the agent's calls holds (it speaks the original interface)."""
        arguments = call.arguments
        inner = call.below if call.below is not None and call.below != arguments else None
        self.trace.tool_called(
            call.name,
            call.slot,
            arguments,
            outcome,
            inner,
            result,
            text,
            error,
            sorted(set(call.touched)) if call.touched else [],
            round((time.perf_counter() - call.began) * 1_000_000) / 1000,  # ms to the µs; round(x, 3) is slower
        )
        self.engine.remember(call.name, arguments if inner is None else inner, outcome)
        if self.guard is not None:
            self.guard.called(call.name, outcome, result)

    def next_slot(self, name: str) -> int:
        self.slots[name] = self.slots.get(name, 0) + 1
        return self.slots[name]
