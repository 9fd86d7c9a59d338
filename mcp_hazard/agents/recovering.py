"""The recovering agent: the golden path as a plan, and generic recovery from what MCP shows it.

It never reads the fault schedule or the hazard configuration. It sees listings, results, errors and hints, and
recovers with strategies any careful agent could use: retry with backoff (honouring Retry-After), re-list after the
interface changed and re-map arguments by their documented meaning, correct a call from what the error says, fall
back to another tool that looks like it serves the same data, read drifted results back into data, cross-check a
result that calls itself stale, follow pages, and check the state before repeating a write whose reply was lost.

When a planned tool is not served under its name (a renamed or reshaped interface), it picks the listed tool whose
description, input schema, output schema and annotations fit the planned call best (`matching.rank_tools`), never a
tool with side effects for a step that reads, and tries a close runner-up if that choice fails or answers without the
fields the rest of the plan reads.

When a tool fails for good, or answers with a value that calls itself stale, the same evidence picks the other tools
to ask (`fallback.alternatives`: best fits first, at most three, never a writer for a read, never a tool the plan
cannot fill), and the call to each is the plan's own arguments re-mapped onto that tool's schema, as for a renamed
tool: the arguments sent to the failed tool are in its served shape (its names, its `request` object, its augment
constant) and would mislead any other tool.

Every value the plan goes on to read is verified before it is used: a correct call can answer with a plausible
wrong value and no sign of it, so the call that answered is sent again and, when the two readings disagree, a third
reading decides (`verify.confirmed`). Values another tool gave (fallback, cross-check) and steps that write are
not read again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_hazard.agents.correct import corrected_call
from mcp_hazard.agents.drive import AgentReport, Brief, answer_text, hints_of, text_of
from mcp_hazard.agents.fallback import alternatives, in_expected_shape, named_tools, unfilled
from mcp_hazard.agents.matching import planned_write, rank_tools, tool_writes
from mcp_hazard.agents.normalise import coerce_numbers, convert_field, read_result, stale
from mcp_hazard.agents.paths import page_argument, with_path
from mcp_hazard.agents.plan_reads import as_read, expected_fields, has_fields, read_paths, snaked, unaliased_keys
from mcp_hazard.agents.remap import remap_arguments
from mcp_hazard.agents.rereading import confirmed
from mcp_hazard.agents.state_check import went_through
from mcp_hazard.scenario.expressions import ExpressionError, render
from mcp_hazard.server.served_episode import SUBMIT_TOOL

MAX_ATTEMPTS = 6
MAX_CANDIDATES = 3  # tools tried for one renamed step: the best fit and at most two close runners-up
RUNNER_UP_MARGIN = 3.0  # how far below the best fit a runner-up may score and still be tried
PAGE_KEYS = ("page", "total_pages", "next_page")
ALTERNATIVE_ATTEMPTS = 2  # requests to one fallback or cross-check tool: the call, and one corrected or retried
MAX_PAGES = 50
MAX_WAIT_S = 3.0
TRANSIENT = ("503", "429", "timed out", "timeout", "did not answer", "connection reset", "temporarily", "try again")
PERMANENT = ("no longer available", "decommissioned", "permanently")
CHANGED = ("interface has changed", "tool list has changed", "unknown tool")


class _Stuck(Exception):
    pass


class RecoveringAgent:
    name = "recovering"

    def __init__(self) -> None:
        self.tools: dict[str, types.Tool] = {}
        self.report = AgentReport()
        self.timeout = 5.0
        self.confirmed_elsewhere = False  # the current step's value came from another tool (fallback, cross-check)
        self.answered_by: tuple[str, dict[str, Any]] | None = None  # the call that answered the current step

    async def run(self, client: Client, brief: Brief) -> AgentReport:
        self.report = brief.report
        self.timeout = brief.call_timeout_s
        if brief.plan is None:
            self.report.notes.append("the recovering agent needs a plan (the task's golden path)")
            return self.report
        await self.relist(client)
        results: dict[str, Any] = {}
        for index, step in enumerate(brief.plan.steps):
            try:
                arguments = _render(step.arguments, results)
                paths = read_paths(brief.plan, index)
                value = await self.verified(client, step.tool, arguments, expected_fields(brief.plan, index), paths)
            except (_Stuck, ExpressionError) as exc:
                self.report.notes.append(f"{step.id}: {exc}")
                return self.report
            results[step.id] = as_read(value, paths)
        try:
            self.report.answer = answer_text(_render(brief.plan.answer, results))
        except ExpressionError as exc:
            self.report.notes.append(f"answer: {exc}")
            return self.report
        await client.call_tool(SUBMIT_TOOL, {"answer": self.report.answer})
        return self.report

    # -- listing ------------------------------------------------------------------------------------------------

    async def relist(self, client: Client) -> None:
        listing = await client.list_tools(cache_mode="refresh")
        self.tools = {tool.name: tool for tool in listing.tools if tool.name != SUBMIT_TOOL}

    def current_name(
        self, wanted: str, arguments: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> str:
        """The tool's name now: the same, or the listed tool that fits best by its description, how well our
        arguments fit its schema, the fields it documents returning and whether it has side effects (a renamed or
        replaced tool; see `matching.rank_tools`)."""
        candidates = self.candidates(wanted, arguments, fields)
        return candidates[0] if candidates else wanted

    def candidates(
        self, wanted: str, arguments: dict[str, Any] | None = None, fields: list[str] | None = None
    ) -> list[str]:
        """Listed tools that may be the planned `wanted`, best first: only `wanted` itself while it is served;
        otherwise the best fit and the runners-up within `RUNNER_UP_MARGIN` of it (at most `MAX_CANDIDATES`),
        tools with side effects left out when the step only reads."""
        if wanted in self.tools or not self.tools:
            return [wanted]
        ranked = rank_tools(list(self.tools.values()), wanted, arguments or {}, fields or [])
        reading = not planned_write(wanted)
        safe = [c for c in ranked if not (reading and c.writes)]
        if not safe:
            return [ranked[0].name]
        close = [c.name for c in safe if c.score >= safe[0].score - RUNNER_UP_MARGIN]
        return close[:MAX_CANDIDATES]

    def remap(self, tool: types.Tool, arguments: dict[str, Any]) -> dict[str, Any]:
        """Arguments re-mapped onto `tool`'s documented schema by names, descriptions, patterns and types; new
        constants filled in; formats and types fitted; and nested into a single request object if that is the
        documented shape."""
        return remap_arguments(tool.input_schema or {}, arguments)

    # -- one step -----------------------------------------------------------------------------------------------

    async def verified(
        self, client: Client, tool: str, arguments: dict[str, Any], fields: list[str], paths: Sequence[list[Any]] = ()
    ) -> Any:
        """One plan step whose result the plan reads, read again to confirm it (`verify.confirmed`): a correct call
        can answer with a plausible wrong value. Not for a step that writes, nor for a value another tool gave."""
        self.confirmed_elsewhere, self.answered_by = False, None
        value = await self.call(client, tool, arguments, fields)
        if not (fields or paths) or planned_write(tool) or self.writes(tool) or self.confirmed_elsewhere:
            return value
        return await confirmed(value, lambda: self.reread(client, tool, arguments, fields), fields, paths)

    def writes(self, tool: str) -> bool:
        """Whether the tool that answered (or the planned one) says it has side effects (its annotations): a second
        call would not read the same thing again (it marks emails read, say), so it is not read twice."""
        name = self.answered_by[0] if self.answered_by is not None else tool
        listed = self.tools.get(name)
        return listed is not None and listed.annotations is not None and tool_writes(listed)

    async def reread(self, client: Client, tool: str, arguments: dict[str, Any], fields: list[str]) -> Any:
        """The call that answered, sent again exactly as it was (no second round of corrections); the whole step
        again when that call fails now."""
        if self.answered_by is not None:
            name, args = self.answered_by
            try:
                result = await client.call_tool(name, args, read_timeout_seconds=self.timeout)
            except MCPError:
                result = None
            self.report.calls += 1
            if result is not None and not result.is_error:
                value = read_result(text_of(result), result.structured_content)
                return await self.all_pages(client, name, args, value, hints_of(result))
        return await self.call(client, tool, arguments, fields)

    async def call(self, client: Client, tool: str, arguments: dict[str, Any], fields: list[str]) -> Any:
        """Run one plan step. When the planned tool is served, that is the only tool tried. When it was chosen by
        fit (the interface changed), a close runner-up is tried next if the choice fails for good or answers
        without the fields the rest of the plan reads; if no runner-up does better, the first answer stands."""
        candidates = self.candidates(tool, arguments, fields)
        answered: list[tuple[Any, tuple[str, dict[str, Any]] | None]] = []  # (value, the call that gave it)
        failure: _Stuck | None = None
        for name in candidates:
            try:
                value = await self.attempt(client, tool, name, arguments, fields)
            except _Stuck as exc:
                failure = failure or exc
                continue
            if len(candidates) == 1 or has_fields(value, fields):
                return value
            answered.append((value, self.answered_by))
        if answered:
            value, self.answered_by = answered[0]
            return value
        raise failure or _Stuck(f"no listed tool serves {tool}")

    async def attempt(self, client: Client, tool: str, name: str, arguments: dict[str, Any], fields: list[str]) -> Any:
        """Call `name` for the planned `tool`, recovering from what errors say; `_Stuck` when nothing helps."""
        args = self.remap(self.tools[name], arguments) if name in self.tools else dict(arguments)
        last, repeats, tried_formats, fell_back = "", 0, 0, False
        for attempt in range(MAX_ATTEMPTS):
            try:
                result = await client.call_tool(name, args, read_timeout_seconds=self.timeout)
            except MCPError as exc:  # a client-side timeout: the server may be slow only this once
                self.report.calls += 1
                last = str(exc)
                done = await self.went_through(client, tool, name, args, [last])
                if done is not None:
                    return done
                await anyio.sleep(min(0.05 * 2**attempt, MAX_WAIT_S))
                continue
            self.report.calls += 1
            text, hints = text_of(result), hints_of(result)
            if not result.is_error:
                self.answered_by = (name, args)
                value = read_result(text, result.structured_content)
                value = await self.all_pages(client, name, args, value, hints)
                if stale(value):
                    value = await self.cross_check(client, tool, name, arguments, value, fields, [text, *hints])
                return value
            lowered = text.lower()
            repeats = repeats + 1 if text == last else 0
            last = text
            gone = any(word in lowered for word in PERMANENT)
            if gone or (repeats >= 2 and "503" in lowered and not fell_back):
                # the plan's arguments, not `args`: those are in this tool's served shape, not the alternative's
                fell_back = True
                try:
                    return await self.fall_back(client, tool, name, arguments, fields, [text, *hints])
                except _Stuck:
                    if gone:
                        raise
            if any(word in lowered for word in CHANGED):
                await self.relist(client)
                name = self.current_name(tool, arguments, fields)
                args = self.remap(self.tools[name], arguments) if name in self.tools else args
                continue
            corrected = corrected_call(args, text, hints, tried_formats)
            if corrected is not None:
                args, tried_formats = corrected[0], corrected[1]
                continue
            if any(word in lowered for word in TRANSIENT):
                done = await self.went_through(client, tool, name, args, [text, *hints])
                if done is not None:
                    return done
                wait = re.search(r"retry-after:\s*(\d+(?:\.\d+)?)", lowered)
                await anyio.sleep(min(float(wait.group(1)), MAX_WAIT_S) if wait else 0.05 * 2**attempt)
                continue
            raise _Stuck(f"{name} failed: {text[:200]}")
        raise _Stuck(f"{name} still failing after {MAX_ATTEMPTS} attempts: {last[:200]}")

    async def went_through(
        self, client: Client, tool: str, name: str, args: dict[str, Any], said: Sequence[str]
    ) -> Any | None:
        """After a write failed in a way that may hide its effect: what a read shows of it (`state_check`)."""
        if not (planned_write(tool) or (name in self.tools and tool_writes(self.tools[name]))):
            return None  # a read is simply retried
        shown, asked = await went_through(client, list(self.tools.values()), name, args, said, self.timeout)
        self.report.calls, self.answered_by = self.report.calls + asked, None if shown is not None else self.answered_by
        return shown

    async def all_pages(
        self, client: Client, name: str, args: dict[str, Any], value: Any, hints: Sequence[str] = ()
    ) -> Any:
        """The whole list of a paged result: the next pages asked for through the argument the listing (or a hint)
        gives for the page number, wherever the interface puts it."""
        if not isinstance(value, dict) or not value.get("next_page"):
            return value
        tool = self.tools.get(name)
        where = page_argument(tool.input_schema if tool is not None else None, " ".join(hints))
        key = next((k for k, v in value.items() if isinstance(v, list)), None)
        lines = key is None  # a paged text (one entry per line), as a proxied server's listing may be
        if lines:
            key = next((k for k, v in value.items() if isinstance(v, str) and k not in PAGE_KEYS), None)
        if key is None:
            return value
        items = list(value[key]) if not lines else str(value[key]).splitlines()
        page = value["next_page"]
        for _ in range(MAX_PAGES):
            if not page:
                break
            result = await client.call_tool(name, with_path(args, where, page), read_timeout_seconds=self.timeout)
            self.report.calls += 1
            more = read_result(text_of(result), result.structured_content)
            if result.is_error or not isinstance(more, dict):
                raise _Stuck(f"{name} page {page} failed")
            items.extend(str(more.get(key) or "").splitlines() if lines else more.get(key) or [])
            page = more.get("next_page")
        merged = {k: v for k, v in value.items() if k not in PAGE_KEYS}
        merged[key] = "\n".join(items) if lines else items
        return merged

    def alternatives(
        self, tool: str, name: str, arguments: dict[str, Any], fields: list[str], said: list[str] | None = None
    ) -> list[types.Tool]:
        """Other listed tools that may serve what the planned `tool(arguments)` serves, best first, `name` (the
        tool that failed or answered stale) left out: ranked like a renamed tool (`fallback.alternatives`), a tool
        that the error or hint names (`said`) first, a tool the plan cannot fill left out."""
        listed = list(self.tools.values())

        def fillable(other: types.Tool) -> bool:
            return not unfilled(other.input_schema or {}, self.remap(other, arguments), arguments)

        return alternatives(listed, name, tool, arguments, fields, named_tools(said or [], listed), fillable)

    async def ask_alternative(self, client: Client, other: types.Tool, arguments: dict[str, Any]) -> Any | None:
        """`other`'s answer to the planned call, re-mapped onto its own schema (its names, its nesting, the
        constant its description asks for); None when it refuses the call. A refusal that says
        how to fix the call, or a transient one, gets one more try."""
        args = self.remap(other, arguments)
        tried = 0
        for attempt in range(ALTERNATIVE_ATTEMPTS):
            try:
                result = await client.call_tool(other.name, args, read_timeout_seconds=self.timeout)
            except MCPError:
                self.report.calls += 1
                continue
            self.report.calls += 1
            text = text_of(result)
            if not result.is_error:
                try:
                    return await self.all_pages(client, other.name, args, read_result(text, result.structured_content))
                except _Stuck:
                    return None
            corrected = corrected_call(args, text, hints_of(result), tried)
            if corrected is not None:
                args, tried = corrected
            elif any(word in text.lower() for word in TRANSIENT):
                await anyio.sleep(0.05 * 2**attempt)
            else:
                return None
        return None

    async def fall_back(
        self,
        client: Client,
        tool: str,
        name: str,
        arguments: dict[str, Any],
        fields: list[str],
        said: list[str] | None = None,
    ) -> Any:
        """The planned step's data from another tool after `name` failed for good, read into the fields the plan
        expects (`fare_cents` for `price_eur`); `_Stuck` when no alternative gives them."""
        for other in self.alternatives(tool, name, arguments, fields, said):
            value = await self.ask_alternative(client, other, arguments)
            if isinstance(value, dict) and has_fields(value, fields):
                self.confirmed_elsewhere = True
                return in_expected_shape(value, fields)
        raise _Stuck(f"{name} is unavailable and no other tool gave the same data")

    async def cross_check(
        self,
        client: Client,
        tool: str,
        name: str,
        arguments: dict[str, Any],
        value: Any,
        fields: list[str],
        said: list[str] | None = None,
    ) -> Any:
        """`value` (which calls itself stale) with the fields the plan reads taken from the first other tool that
        serves them fresh; `value` unchanged when none does."""
        for other in self.alternatives(tool, name, arguments, fields, said):
            second = await self.ask_alternative(client, other, arguments)
            if (
                isinstance(second, dict)
                and not stale(second)
                and has_fields(second, fields)
                and _alike(value, second, fields)
            ):
                self.confirmed_elsewhere = True
                return {**value, **{f: convert_field(second, f) for f in fields}}
        return value


def _alike(value: Any, second: dict[str, Any], fields: list[str]) -> bool:
    """Whether another tool's answer holds the same kinds of values as the stale one (text for text, a number for
    a number): a tool that answers with a list of blobs under the same name serves something else."""

    def kind(item: Any) -> str:
        if isinstance(item, bool) or item is None:
            return type(item).__name__
        return "number" if isinstance(item, int | float) else type(item).__name__

    first = value if isinstance(value, dict) else {}
    return all(f not in first or kind(first[f]) == kind(convert_field(second, f)) for f in fields)


def _render(template: Any, results: dict[str, Any]) -> Any:
    """Fill the plan's template; if the results' numbers came as text and arithmetic failed, read them as numbers; if
    a key it reads was a display-like name, read as a field name (`unaliased_keys`)."""
    try:
        return render(template, results)
    except ExpressionError:
        try:
            return render(template, coerce_numbers(results))
        except ExpressionError:
            try:
                return render(unaliased_keys(template), coerce_numbers(results))
            except ExpressionError:
                return render(unaliased_keys(template, every=True), snaked(coerce_numbers(results)))
