"""Pagination: a list in the result is split into pages; the item the agent needs may be on a later page.

The listing gains an optional `page` argument; each result says `page`, `total_pages` and `next_page`.
Recovery: fetch every page before concluding.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import Field

from mcp_hazard.hazards.base import CallContext, Effect, Hazard, HazardParams, Rejection, ToolFacts, ToolView
from mcp_hazard.hazards.capabilities import JudgesRecovery, Lists, Placement
from mcp_hazard.hazards.recovery import Call, Firing, Found, arguments_of
from mcp_hazard.hazards.solving import Solver, Unsolved
from mcp_hazard.scenario.behaviours import ToolOutcome
from mcp_hazard.scenario.models import Task

MAX_PAGES = 100  # fetched by the solvability step, at most


class PageParams(HazardParams):
    page_size: int = Field(default=1, ge=1, le=1000)


class Pagination(Placement, Lists, JudgesRecovery, Hazard):
    kind = "pagination"
    family = "pagination"
    recovery = ("paginate",)
    summary = "Lists in results are paginated; the needed item may be on a later page."
    needs = "a list in a golden-path result long enough that the answer needs a later page"
    failpoints = ("listing", "before", "after")
    Params = PageParams

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._paged: dict[int, tuple[dict[str, Any], dict[str, Any]]] = {}  # id(schema below) -> (below, with page)

    @classmethod
    def why_not(cls, facts: ToolFacts, task: Task, tool: str) -> str | None:
        return facts.page_problem(task, tool, None)  # with the default page size

    def usable(self, tool: str) -> str | None:
        return self.facts.page_problem(self.task, tool, self.params.page_size)  # type: ignore[attr-defined]

    @classmethod
    def recovered(cls, firing: Firing) -> Found | None:
        """An ok call of the same tool for a later page than the one served; the last page needs nothing more."""
        page, total = firing.change.get("page", 1), firing.change.get("total_pages", 0)
        if isinstance(page, int) and isinstance(total, int) and total and page >= total:
            return "paginate", None
        after = page if isinstance(page, int) else 1
        return next(
            (("paginate", c) for c in firing.ok_calls() if c["tool"] == firing.tool
             and isinstance(arguments_of(c), dict) and _page(arguments_of(c)) > after),
            None,
        )  # fmt: skip

    async def solve_result(self, solver: Solver, tool: str, arguments: dict[str, Any], event: Call, value: Any) -> Any:
        """Fetch every page and put the list back together."""
        if not isinstance(value, dict) or not value.get("total_pages"):
            return value
        key = next(k for k, v in value.items() if isinstance(v, list))
        items = list(value[key])
        for page in range(2, min(int(value["total_pages"]), MAX_PAGES) + 1):
            ok, paged = await solver.call(tool, {**arguments, "page": page})
            if not ok:
                raise Unsolved(f"page {page} failed: {paged.get('error')}")
            items.extend(paged["result"][key])
        merged = {k: v for k, v in value.items() if k not in ("page", "total_pages", "next_page")}
        merged[key] = items
        return merged

    def listing_state(self) -> object:
        return None  # the listing never changes: the page argument, from the start

    def view(self, view: ToolView) -> ToolView:
        view.input_schema = self._with_page(view.input_schema)
        view.output_schema = None
        view.description = view.description.rstrip() + " Long lists are returned in pages."
        return view

    def _with_page(self, below: dict[str, Any]) -> dict[str, Any]:
        """The schema with a `page` argument; the same object for the same schema below, so what is built on the
        listing (validators, served surfaces) is kept from call to call."""
        memo = self._paged
        known = memo.get(id(below))
        if known is not None and known[0] is below:
            return known[1]
        schema = copy.deepcopy(below)
        props = dict(schema.get("properties") or {})
        props["page"] = {"type": "integer", "minimum": 1, "description": "Page of results to return (default 1)."}
        schema["properties"] = props
        memo[id(below)] = (below, schema)
        return schema

    def before(self, call: CallContext, fire: bool) -> Effect | None:
        if "page" not in call.sent:
            return None
        page = call.sent.get("page")
        args = {k: v for k, v in call.arguments.items() if k != "page"}
        effect = Effect(change={"page": page}, arguments=args, record=False)
        if not isinstance(page, int) or isinstance(page, bool) or page < 1:
            effect.rejection = Rejection(f"Invalid argument 'page': {page!r} is not a page number (1, 2, ...).")
        return effect

    def after(self, call: CallContext, outcome: ToolOutcome, fire: bool) -> Effect | None:
        if not fire or not outcome.ok:
            return None
        size = self.params.page_size  # type: ignore[attr-defined]
        paged = self.facts.paged(call.tool, outcome.result, call.sent.get("page", 1), size)
        if paged is None:
            return None
        result, key, total = paged
        page = call.sent.get("page", 1)
        page = page if isinstance(page, int) and not isinstance(page, bool) and page >= 1 else 1
        return Effect(
            change={"list": key, "page": page, "total_pages": total},
            result=result,
            replace_result=True,
            hint="Only part of the list is shown: request the next pages with the 'page' argument."
            if page < total
            else None,
        )


def _page(arguments: dict[str, Any]) -> int:
    page = arguments.get("page", 1)
    return page if isinstance(page, int) and not isinstance(page, bool) else 1
